"""`kbert convert`, called through `kbert.cli.main`."""

import os

import keras
import numpy as np
import pytest

import kbert
from kbert.cli import main
from tests.presets.presets_helpers import (
    has_preprocessing,
    random_hf_model,
    read_json,
    save_hf_model,
    write_google_checkpoint,
)


def weights_of(model):
    return [keras.ops.convert_to_numpy(v) for v in model.weights]


def test_hf_to_kbert_and_back(tmp_path, capsys):
    source = save_hf_model(random_hf_model("BertForPreTraining", seed=10), tmp_path / "hf")
    assert main(["convert", source, str(tmp_path / "kbert")]) == 0
    printed = capsys.readouterr().out
    assert "Loaded BertPretrainer (pretrainer)" in printed
    assert "heads loaded: masked_lm, next_sentence" in printed
    assert "vocabulary size: 97" in printed and "num_layers=2" in printed
    converted = kbert.BertPretrainer.from_preset(str(tmp_path / "kbert"))
    original = kbert.BertPretrainer.from_preset(source)
    for a, b in zip(weights_of(converted), weights_of(original)):
        np.testing.assert_array_equal(a, b)

    assert (
        main(["convert", str(tmp_path / "kbert"), str(tmp_path / "back"), "--to", "hf"])
        == 0
    )
    assert read_json(str(tmp_path / "back" / "config.json"))["architectures"] == [
        "BertForPreTraining"
    ]
    assert "Wrote a Hugging Face directory" in capsys.readouterr().out


def test_task_choice_and_head_arguments(tmp_path, capsys):
    source = save_hf_model(random_hf_model("BertForMaskedLM", seed=11), tmp_path / "hf")
    code = main(
        [
            "convert",
            source,
            str(tmp_path / "clf"),
            "--task",
            "classifier",
            "--num-classes",
            "4",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "freshly initialized: classifier" in printed and "ignored: masked_lm" in printed
    assert "no pooler weights" in printed
    assert kbert.BertClassifier.from_preset(str(tmp_path / "clf")).num_classes == 4
    assert main(["convert", source, str(tmp_path / "x"), "--task", "classifier"]) == 1
    assert "pass it, e.g." in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


def test_google_to_hf_and_registered_name(tmp_path, capsys):
    hf_model = random_hf_model("BertForPreTraining", seed=12, layer_norm_eps=1e-12)
    directory, _ = write_google_checkpoint(tmp_path / "google", hf_model)
    assert main(["convert", directory, str(tmp_path / "hf"), "--to", "hf"]) == 0
    assert "Loaded BertPretrainer (pretrainer)" in capsys.readouterr().out
    out = str(tmp_path / "minilm")
    assert main(["convert", "splade_tiny_mlm", out, "--to", "hf"]) == 0
    printed = capsys.readouterr().out
    assert (
        "Loaded BertMaskedLM (masked_lm)" in printed and "vocabulary size: 30522" in printed
    )
    if has_preprocessing():
        assert "tokenizer: yes" in printed
        assert os.path.isfile(os.path.join(out, "vocab.txt"))


def test_help_lists_the_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "--help"])
    assert exit_info.value.code == 0
    assert "--to {kbert,hf}" in capsys.readouterr().out


def test_every_subcommand_is_reachable(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    printed = capsys.readouterr().out
    assert all(name in printed for name in ("convert", "finetune", "embed"))
