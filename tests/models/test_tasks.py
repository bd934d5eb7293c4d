import keras
import numpy as np
import pytest

import kbert
from tests.test_case import run_model_test, tiny_backbone, to_numpy, token_inputs

pytestmark = pytest.mark.eager_on_tensorflow  # tests/conftest.py

BATCH, LENGTH = 3, 10


def _positions():
    return {"mask_positions": np.array([[1, 2]] * BATCH, "int32")}


CASES = {
    "classifier_single_label": (
        kbert.BertClassifier,
        dict(num_classes=3),
        {},
        (BATCH, 3),
        np.array([0, 2, 1]),
    ),
    "classifier_multi_label": (
        kbert.BertClassifier,
        dict(num_classes=4, problem_type="multi_label"),
        {},
        (BATCH, 4),
        np.array([[1, 0, 1, 0], [0, 0, 0, 1], [1, 1, 0, 0]], "float32"),
    ),
    "classifier_regression": (
        kbert.BertClassifier,
        dict(num_classes=1, problem_type="regression"),
        {},
        (BATCH, 1),
        np.array([[0.5], [-1.0], [2.0]], "float32"),
    ),
    "token_classifier": (
        kbert.BertTokenClassifier,
        dict(num_classes=5),
        {},
        (BATCH, LENGTH, 5),
        np.where(np.arange(LENGTH) < 6, np.arange(LENGTH) % 5, -100)[None].repeat(BATCH, 0),
    ),
    "question_answerer": (
        kbert.BertQuestionAnswerer,
        {},
        {},
        {"start_logits": (BATCH, LENGTH), "end_logits": (BATCH, LENGTH)},
        {"start_logits": np.array([1, 2, 3]), "end_logits": np.array([2, 2, 5])},
    ),
    "masked_lm": (
        kbert.BertMaskedLM,
        {},
        _positions(),
        (BATCH, 2, 64),
        np.array([[5, 6]] * BATCH),
    ),
    "pretrainer": (
        kbert.BertPretrainer,
        {},
        _positions(),
        {"mlm_logits": (BATCH, 2, 64), "nsp_logits": (BATCH, 2)},
        {"mlm_logits": np.array([[5, 6]] * BATCH), "nsp_logits": np.array([0, 1, 1])},
    ),
    "text_embedder": (kbert.BertTextEmbedder, dict(pooling="mean"), {}, (BATCH, 16), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_task_harness(case, tmp_path):
    cls, kwargs, extra_inputs, expected_shape, y = CASES[case]
    data = {**token_inputs(BATCH, LENGTH), **extra_inputs}
    run_model_test(
        cls,
        lambda: dict(backbone=tiny_backbone(), **kwargs),
        data,
        expected_shape,
        y=y,
        tmp_path=tmp_path,
        run_fit=y is not None,
    )


def test_multiple_choice_harness(tmp_path):
    data = token_inputs(2, LENGTH, extra_dims=(4,))
    run_model_test(
        kbert.BertMultipleChoice,
        lambda: dict(backbone=tiny_backbone(), num_choices=4),
        data,
        (2, 4),
        y=np.array([1, 3]),
        tmp_path=tmp_path,
    )


def test_multiple_choice_scores_each_choice_independently():
    model = kbert.BertMultipleChoice(tiny_backbone(), num_choices=3)
    data = token_inputs(2, LENGTH, extra_dims=(3,))
    logits = to_numpy(model(data))
    single = {k: v[:, 1] for k, v in data.items()}
    pooled = to_numpy(model.backbone(single))["pooled_output"]
    kernel, bias = (to_numpy(w) for w in model.classifier.weights)
    np.testing.assert_allclose(logits[:, 1], (pooled @ kernel + bias)[:, 0], atol=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_text_embedder_pooling_ignores_padding(pooling):
    embedder = kbert.BertTextEmbedder(tiny_backbone(), pooling=pooling, normalize=True)
    data = token_inputs(2, LENGTH)
    sequence = to_numpy(embedder.backbone(data))["sequence_output"]
    mask = data["padding_mask"][..., None].astype(bool)
    expected = {
        "mean": (sequence * mask).sum(1) / mask.sum(1),
        "cls": sequence[:, 0],
        "max": np.where(mask, sequence, -np.inf).max(1),
    }[pooling]
    expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    np.testing.assert_allclose(to_numpy(embedder(data)), expected, atol=1e-5)


def test_masked_lm_decoder_is_tied_to_token_embedding():
    model = kbert.BertMaskedLM(tiny_backbone())
    assert model.masked_lm_head.token_embedding is model.backbone.token_embedding
    own = {id(v) for v in model.masked_lm_head.weights} - {
        id(v) for v in model.backbone.weights
    }
    assert len(own) == 5  # transform kernel/bias, LayerNorm gamma/beta, output_bias
    embedding = model.backbone.token_embedding.embeddings
    embedding.assign(embedding * 0)
    logits = to_numpy(
        model({**token_inputs(1, LENGTH), **{"mask_positions": np.array([[1]])}})
    )
    np.testing.assert_allclose(
        logits, np.broadcast_to(to_numpy(model.masked_lm_head.output_bias), logits.shape)
    )


def test_compile_defaults_pick_fastest_path():
    """Training: XLA on JAX only (TensorFlow on a CPU trains faster without
    it, torch recompiles per length); inference chosen per `predict` call
    (`test_predict_compiles_with_xla_once_the_job_is_long`)."""
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2)
    backend = keras.backend.backend()
    assert model.jit_compile == (backend == "jax")
    assert model._inference_jit_compile == "auto"
    assert isinstance(model.optimizer, keras.optimizers.AdamW)


def test_unknown_problem_type_is_a_clear_error():
    with pytest.raises(ValueError, match="problem_type must be one of"):
        kbert.BertClassifier(tiny_backbone(), num_classes=2, problem_type="ranking")


def test_feature_extractor_concatenates_last_four_hidden_states(tmp_path):
    backbone = tiny_backbone(num_layers=4)
    data = token_inputs(BATCH, LENGTH)
    run_model_test(
        kbert.BertFeatureExtractor,
        lambda: dict(backbone=tiny_backbone(num_layers=4)),
        data,
        (BATCH, LENGTH, 64),
        tmp_path=tmp_path,
        run_fit=False,
    )
    reference = kbert.BertBackbone.from_config(
        {**backbone.get_config(), "output_hidden_states": True}
    )
    reference.set_weights(backbone.get_weights())
    hidden = to_numpy(reference(data))["hidden_states"]
    features = to_numpy(kbert.BertFeatureExtractor(backbone)(data))
    np.testing.assert_allclose(features, np.concatenate(hidden[-4:], axis=-1), atol=1e-6)
    second = to_numpy(
        kbert.BertFeatureExtractor(backbone, layers=(2,), combine="sum")(data)
    )
    np.testing.assert_allclose(second, hidden[2], atol=1e-6)


def test_feature_extractor_refuses_out_of_range_layers():
    with pytest.raises(ValueError, match="indices into the 3 hidden states"):
        kbert.BertFeatureExtractor(tiny_backbone(), layers=(5,))
