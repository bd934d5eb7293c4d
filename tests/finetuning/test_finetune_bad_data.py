"""`kbert finetune` on bad data: one label one class, diverged runs stop
without a broken preset, results.json always strict JSON (issue 28)."""

import json
import math

import pytest

from kbert.finetuning.commands import add_finetune_command
from kbert.finetuning.file_finetuning import finetune_on_files, results_json
from kbert.finetuning.recipe import FinetuneRecipe
from kbert.utils.labelled_files import encode_labels, label_names
from tests.finetuning.test_finetune_commands import run

TEXTS = ["good fun movie", "dull awful plot", "the plot", "fun plot"]

pytestmark = pytest.mark.backend_independent


def recipe(preset, **overrides):
    options = dict(
        preset=preset, sequence_length=8, batch_size=4, epochs=1, learning_rate=1e-3
    )
    return FinetuneRecipe(**{**options, **overrides})


def test_one_label_written_differently_is_one_class():
    assert label_names([0, 1.0, 1, 0.0], "t.csv") == ["0", "1"]
    assert label_names(["0", "1.0", "1", "0.0"], "t.csv") == ["0", "1"]
    assert label_names([1, "1", 1.0, 0], "t.jsonl") == ["0", "1"]
    assert label_names([True, "false", "True"], "t.jsonl") == ["false", "true"]
    assert label_names([True, 0, 1], "t.jsonl") == ["0", "1"]
    assert encode_labels([0, 1.0, "1", True], ["0", "1"], "t.jsonl") == [0, 1, 1, 1]


def test_numeric_labels_sort_numerically():
    names = label_names([str(i) for i in range(12)][::-1], "t.csv")
    assert names == [str(i) for i in range(12)]
    assert label_names([2.5, 10, "1"], "t.csv") == ["1", "2.5", "10"]


def test_mixed_label_kinds_are_refused_by_line():
    with pytest.raises(ValueError, match="t.csv: line 4 has label 'pos', a text"):
        label_names([0, 1, "pos"], "t.csv", lines=[2, 3, 4])
    with pytest.raises(ValueError, match="line 3 has label 1, a number"):
        label_names(["pos", 1], "t.csv", lines=[2, 3])


def test_finetune_reads_labels_as_classes_in_id_order(tmp_path, tiny_preset):
    train = tmp_path / "train.jsonl"
    labels = [1, "1", 1.0, 0, "0.0", 0, 10, "2", 2.0, "10", 1, 0]
    lines = [
        json.dumps({"text": TEXTS[i % 4], "label": label}) for i, label in enumerate(labels)
    ]
    train.write_text("\n".join(lines) + "\n")
    results = finetune_on_files(
        str(train), str(tmp_path / "out"), recipe=recipe(tiny_preset), verbose=0
    )
    assert results["labels"] == ["0", "1", "2", "10"]
    assert list(results["classification_report"]["classes"]) == ["0", "1", "2", "10"]
    assert len(results["confusion_matrix"]) == 4
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert written["labels"] == ["0", "1", "2", "10"]


def test_finetune_refuses_mixed_labels_naming_the_line(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.csv"
    train.write_text("text,label\ngood,1\nbad,0\nmeh,neutral\n")
    argv = ["finetune", str(train), "--preset", tiny_preset, "--out", str(tmp_path / "o")]
    with pytest.raises(ValueError, match="train.csv: line 4 has label 'neutral'"):
        run(add_finetune_command, argv)


def test_results_json_is_strict():
    text = results_json({"loss": float("nan"), "history": {"loss": [1.0, math.inf]}})
    assert json.loads(text) == {"loss": None, "history": {"loss": [1.0, None]}}
    assert "NaN" not in text and "Infinity" not in text


def test_diverged_finetune_exits_1_and_saves_no_preset(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.csv"
    rows = [f"{TEXTS[i % 4]},{i % 2}" for i in range(16)]
    train.write_text("text,label\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out"
    argv = ["finetune", str(train), "--preset", tiny_preset, "--out", str(out)]
    argv += ["--sequence-length", "8", "--batch-size", "4", "--epochs", "2"]
    argv += ["--learning-rate", "1e30"]
    assert run(add_finetune_command, argv) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("kbert finetune: error:") and "\n" not in error, error
    assert "epoch 1, step" in error, error
    assert not (out / "preset").exists()
    assert not (out / "results.json").exists()
