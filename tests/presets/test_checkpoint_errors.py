"""Checkpoints that do not fit: every problem listed, nothing half-loaded."""

import os

import keras
import numpy as np
import pytest

import kbert
from kbert.presets.huggingface import load_hf_weights
from tests.presets.presets_helpers import (
    random_hf_model,
    read_json,
    read_safetensors,
    save_hf_model,
    write_json,
    write_safetensors,
)


@pytest.fixture(scope="module")
def masked_lm_dir(tmp_path_factory):
    model = random_hf_model("BertForMaskedLM", seed=4)
    return save_hf_model(model, tmp_path_factory.mktemp("mlm"))


def broken_copy(source, destination, drop=(), add=None, config=None):
    os.makedirs(destination, exist_ok=True)
    tensors = read_safetensors(os.path.join(source, "model.safetensors"))
    tensors = {k: v for k, v in tensors.items() if k not in drop}
    tensors.update(add or {})
    write_safetensors(tensors, os.path.join(destination, "model.safetensors"))
    config = {**read_json(os.path.join(source, "config.json")), **(config or {})}
    write_json(os.path.join(destination, "config.json"), config)
    return str(destination)


def test_all_problems_are_listed_with_names_and_shapes(masked_lm_dir, tmp_path):
    broken = broken_copy(
        masked_lm_dir,
        tmp_path / "broken",
        drop=("bert.encoder.layer.1.output.dense.weight",),
        add={
            "bert.encoder.layer.7.output.dense.bias": np.zeros(48, "float32"),
            "cls.predictions.transform.dense.bias": np.zeros(50, "float32"),
        },
    )
    with pytest.raises(ValueError) as error:
        kbert.BertMaskedLM.from_preset(broken)
    message = str(error.value)
    print(message)
    assert "model.safetensors" in message and "nothing was loaded" in message
    assert "missing weights (1)" in message
    assert "bert.encoder.layer.1.output.dense.weight (expected shape (48, 64))" in message
    assert "unexpected weights (1)" in message
    assert "bert.encoder.layer.7.output.dense.bias (shape (48,))" in message
    assert "shape mismatches (1)" in message
    assert (
        "cls.predictions.transform.dense.bias: shape (50,) in the checkpoint, (48,)"
        in message
    )


def test_config_that_does_not_fit_the_weights(masked_lm_dir, tmp_path):
    broken = broken_copy(masked_lm_dir, tmp_path / "vocab", config={"vocab_size": 90})
    with pytest.raises(
        ValueError,
        match=r"bert\.embeddings\.word_embeddings\.weight: shape \(97, 48\) in the "
        r"checkpoint, \(90, 48\)",
    ):
        kbert.BertBackbone.from_preset(broken)


def test_nothing_is_half_loaded(masked_lm_dir, tmp_path):
    model = kbert.BertMaskedLM.from_preset(masked_lm_dir)
    before = [keras.ops.convert_to_numpy(v).copy() for v in model.weights]
    broken = broken_copy(
        masked_lm_dir, tmp_path / "late", drop=("cls.predictions.transform.LayerNorm.bias",)
    )
    with pytest.raises(ValueError, match=r"cls\.predictions\.transform\.LayerNorm\.bias"):
        load_hf_weights(model, broken)
    for value, variable in zip(before, model.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), value)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_safetensors_name_the_file(masked_lm_dir, tmp_path, damage):
    directory = tmp_path / damage
    directory.mkdir()
    os.link(os.path.join(masked_lm_dir, "config.json"), directory / "config.json")
    with open(os.path.join(masked_lm_dir, "model.safetensors"), "rb") as file:
        data = file.read()
    data = {"truncated": data[: len(data) - 1000], "garbage": b"\x00" * 64, "empty": b""}[
        damage
    ]
    (directory / "model.safetensors").write_bytes(data)
    with pytest.raises(
        ValueError,
        match=rf"{directory}/model\.safetensors is not a readable safetensors file"
        r".*truncated or corrupted",
    ):
        kbert.BertMaskedLM.from_preset(str(directory))


def test_damaged_pytorch_bin_names_the_file(masked_lm_dir, tmp_path):
    (tmp_path / "config.json").write_text(
        open(os.path.join(masked_lm_dir, "config.json")).read()
    )
    (tmp_path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin: cannot be read safely"):
        kbert.BertBackbone.from_preset(str(tmp_path))


def test_directory_without_weights(masked_lm_dir, tmp_path):
    (tmp_path / "config.json").write_text(
        open(os.path.join(masked_lm_dir, "config.json")).read()
    )
    (tmp_path / "tf_model.h5").write_bytes(b"")
    with pytest.raises(
        ValueError, match=r"no PyTorch weights.*model\.safetensors.*tf_model\.h5"
    ):
        kbert.BertBackbone.from_preset(str(tmp_path))
