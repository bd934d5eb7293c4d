"""Original Google BERT directories: TF1 checkpoints written here with the
google-research/bert variable names, from known (random HF) weights."""

import os
import shutil

import numpy as np
import pytest

import kbert
from tests.presets.presets_helpers import (
    assert_parity,
    hf_run,
    numpy_of,
    random_hf_model,
    token_batch,
    write_google_checkpoint,
)

# The original code has no layer_norm_eps: it is always 1e-12.
GOOGLE_CONFIG = dict(layer_norm_eps=1e-12, hidden_act="gelu")


@pytest.fixture(scope="module")
def pretraining_checkpoint(tmp_path_factory):
    hf_model = random_hf_model("BertForPreTraining", seed=8, **GOOGLE_CONFIG)
    directory, variables = write_google_checkpoint(
        tmp_path_factory.mktemp("google"),
        hf_model,
        # Optimizer slots and the step counter of a training run are skipped.
        extra={
            "global_step": np.array(1000, "int64"),
            "bert/pooler/dense/kernel/adam_m": np.zeros((48, 48), "float32"),
        },
    )
    return hf_model, directory, variables


def test_pretrainer_matches_transformers(pretraining_checkpoint):
    hf_model, directory, variables = pretraining_checkpoint
    assert variables["cls/seq_relationship/output_weights"].shape == (2, 48)
    assert "bert/encoder/layer_1/attention/output/LayerNorm/gamma" in variables
    batch = token_batch(97, num_segments=16, seed=8)
    positions = np.array([[2, 1], [0, 4], [3, 3]], "int32")
    reference = hf_run(hf_model, batch)
    pretrainer = kbert.BertPretrainer.from_preset(directory)
    outputs = pretrainer({**batch, "mask_positions": positions})
    expected = np.take_along_axis(
        numpy_of(reference.prediction_logits), positions[..., None], axis=1
    )
    assert_parity("Google checkpoint mlm_logits", outputs["mlm_logits"], expected)
    assert_parity(
        "Google checkpoint nsp_logits",
        outputs["nsp_logits"],
        numpy_of(reference.seq_relationship_logits),
    )
    backbone = kbert.BertBackbone.from_preset(directory)
    assert_parity(
        "Google checkpoint pooled_output",
        backbone(batch)["pooled_output"],
        numpy_of(hf_run(hf_model.bert, batch).pooler_output),
    )


def test_run_classifier_checkpoint_matches_transformers(tmp_path):
    hf_model = random_hf_model(
        "BertForSequenceClassification", seed=9, num_labels=3, **GOOGLE_CONFIG
    )
    directory, variables = write_google_checkpoint(tmp_path / "classifier", hf_model)
    assert variables["output_weights"].shape == (3, 48)
    batch = token_batch(97, num_segments=16, seed=9)
    classifier = kbert.BertClassifier.from_preset(directory)
    assert classifier.num_classes == 3
    assert_parity(
        "Google run_classifier logits",
        classifier(batch),
        numpy_of(hf_run(hf_model, batch).logits),
    )


def test_missing_variable_and_damaged_checkpoint(pretraining_checkpoint, tmp_path):
    hf_model, _, _ = pretraining_checkpoint
    state = {k: v for k, v in hf_model.state_dict().items()}
    del state["bert.encoder.layer.1.intermediate.dense.bias"]

    class Partial:
        config = hf_model.config

        def state_dict(self):
            return state

    directory, _ = write_google_checkpoint(tmp_path / "partial", Partial())
    with pytest.raises(ValueError) as error:
        kbert.BertPretrainer.from_preset(directory)
    assert "missing weights (1)" in str(error.value)
    assert "bert/encoder/layer_1/intermediate/dense/bias (expected shape (64,))" in str(
        error.value
    )


def test_damaged_checkpoint_data(pretraining_checkpoint, tmp_path):
    _, directory, _ = pretraining_checkpoint
    damaged = shutil.copytree(directory, tmp_path / "damaged")
    data = [f for f in os.listdir(damaged) if ".data-" in f][0]
    with open(os.path.join(damaged, data), "r+b") as file:
        file.truncate(100)
    with pytest.raises(ValueError, match="bert_model.ckpt.*truncated or corrupted"):
        kbert.BertBackbone.from_preset(str(damaged))
