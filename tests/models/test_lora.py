"""LoRA (`enable_lora`, saving, merging, exporting), against the LoRA model."""

import json

import keras
import numpy as np
import pytest

import kbert
from kbert.finetuning.commands import add_finetune_command
from kbert.utils.artifact_kinds import ForeignFilesError
from tests.conftest import VOCABULARY
from tests.finetuning.test_finetune_commands import run
from tests.test_case import randomized, tiny_backbone, to_numpy, token_inputs

TEXTS = ["good fun movie", "dull awful plot", "the plot was very good", "not great"]
LABELS = np.array([1, 0, 1, 0])


def _classifier():
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer

    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    return randomized(kbert.BertClassifier(backbone, 2, preprocessor=preprocessor), 0, 0.1)


def _values(model):
    return {v.path: keras.ops.convert_to_numpy(v).copy() for v in model.weights}


def test_only_lora_factors_and_the_head_train_on_raw_strings():
    model = _classifier()
    model.backbone.enable_lora(2)
    trainable = {v.path for v in model.trainable_weights}
    assert trainable == {"classifier/kernel", "classifier/bias"} | {
        f"transformer_layer_{i}/{name}/lora_kernel_{ab}"
        for i in range(2)
        for name in ("query", "value")
        for ab in "ab"
    }
    before = _values(model)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(TEXTS, LABELS, epochs=3, batch_size=4, verbose=0)
    changed = {p for p, v in _values(model).items() if not np.array_equal(v, before[p])}
    assert changed == trainable


def test_lora_weights_save_and_load_alone(tmp_path):
    model = _classifier()
    base = _values(model)
    model.backbone.enable_lora(2, target_names=("query", "key", "output"))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(TEXTS, LABELS, epochs=2, batch_size=4, verbose=0)
    expected = model.predict(TEXTS, verbose=0)
    model.save_lora_weights(tmp_path / "adapter.npz")

    fresh = _classifier()  # the same base weights (seeded), a new head
    for variable in fresh.weights:
        variable.assign(base[variable.path])
    fresh.backbone.enable_lora(2, target_names=("query", "key", "output"))
    fresh.load_lora_weights(tmp_path / "adapter.npz")
    np.testing.assert_allclose(fresh.predict(TEXTS, verbose=0), expected, atol=1e-6)

    other = _classifier()
    other.backbone.enable_lora(4)
    with pytest.raises(ValueError, match="rank 2.*LoRA rank 4"):
        other.load_lora_weights(tmp_path / "adapter.npz")

    # No lost work: kbert's own file is replaced; a user's .npz is refused
    # unless overwrite=True.
    model.save_lora_weights(tmp_path / "adapter.npz")
    np.savez(tmp_path / "mine.npz", weights=np.zeros(3))
    with pytest.raises(ForeignFilesError, match="Refusing to write a LoRA weights file"):
        model.save_lora_weights(tmp_path / "mine.npz")
    assert set(np.load(tmp_path / "mine.npz").files) == {"weights"}
    model.save_lora_weights(tmp_path / "mine.npz", overwrite=True)
    fresh.load_lora_weights(tmp_path / "mine.npz")


def test_merged_and_saved_lora_models_equal_the_lora_model(tmp_path):
    model = _classifier()
    model.backbone.enable_lora(2)
    for layer in model.backbone._flatten_layers():  # a non-zero update to merge
        if getattr(layer, "lora_enabled", False):
            layer.lora_kernel_b.assign(np.full(layer.lora_kernel_b.shape, 0.05, "float32"))
    inputs = token_inputs(vocabulary_size=len(VOCABULARY))
    expected = to_numpy(model.predict(inputs, verbose=0))
    merged = model.merge_lora()
    assert not any("lora" in v.path for v in merged.weights)
    np.testing.assert_allclose(merged.predict(inputs, verbose=0), expected, atol=1e-5)
    model.save(tmp_path / "lora.keras")
    reloaded = keras.saving.load_model(tmp_path / "lora.keras")
    assert not any("lora" in v.path for v in reloaded.weights)
    np.testing.assert_allclose(reloaded.predict(inputs, verbose=0), expected, atol=1e-5)


def test_exporters_write_the_merged_model(tmp_path):
    from kbert.export.onnx.runner import OnnxRunner

    model = _classifier()
    model.backbone.enable_lora(2)
    for layer in model.backbone._flatten_layers():
        if getattr(layer, "lora_enabled", False):
            layer.lora_kernel_b.assign(np.full(layer.lora_kernel_b.shape, 0.05, "float32"))
    inputs = token_inputs(vocabulary_size=len(VOCABULARY))
    expected = model.predict(inputs, verbose=0)
    kbert.export.onnx(model, tmp_path / "model.onnx")
    logits = OnnxRunner(tmp_path / "model.onnx")(inputs)["logits"]
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert model.backbone.lora_rank == 2  # the model itself keeps its LoRA


@pytest.mark.parametrize(
    "args,message",
    [
        ((0,), "positive integer"),
        ((2, ("query", "attention")), "takes names of"),
    ],
)
def test_bad_lora_arguments_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        tiny_backbone().enable_lora(*args)


def test_lora_twice_is_refused():
    backbone = tiny_backbone()
    backbone.enable_lora(2)
    with pytest.raises(ValueError, match="already enabled"):
        backbone.enable_lora(2)


def test_finetune_command_trains_lora_and_says_how_much(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in zip(TEXTS, LABELS)))
    out = tmp_path / "out"
    argv = ["finetune", str(train), "--preset", tiny_preset, "--sequence-length", "8"]
    argv += ["--lora-rank", "2", "--out", str(out)]
    assert run(add_finetune_command, argv) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["recipe"]["lora_rank"] == 2
    trained, total = results["trainable_weights"], results["total_weights"]
    assert f"trains {trained:,} of {total:,} weights" in printed
    lora = 2 * 2 * 2 * (16 * 2)  # layers x (query, value) x (a, b) x 16 x rank 2
    assert trained == lora + 16 * 2 + 2  # and the head
    saved = kbert.BertClassifier.from_preset(str(out / "preset"))
    assert saved.backbone.lora_rank is None  # saved merged
