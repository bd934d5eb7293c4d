"""No lost work: a target holding files kbert did not write is refused, every writer."""

import json
import os

import numpy as np
import pytest

from kbert.cli import main
from kbert.utils.artifact_kinds import (
    ARTIFACT_KINDS,
    ForeignFilesError,
    check_target,
    foreign_files,
)


def write(path, text="mine"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        file.write(text)


def test_missing_or_empty_targets_are_fine(tmp_path):
    for kind, artifact in ARTIFACT_KINDS.items():
        name = "target" if artifact.directory else "target.png"
        assert check_target(tmp_path / kind / name, kind) == []
    (tmp_path / "empty").mkdir()
    assert check_target(tmp_path / "empty", "saved_model") == []
    (tmp_path / "empty.onnx").write_bytes(b"")  # what atomic_file hands a child writer
    assert check_target(tmp_path / "empty.onnx", "onnx") == []


def test_foreign_files_are_refused_and_named(tmp_path):
    target = tmp_path / "preset"
    write(target / "backbone.json", "{}")
    for i in range(7):
        write(target / f"note{i}.txt")
    with pytest.raises(ForeignFilesError) as caught:
        check_target(target, "kbert_preset")
    message = str(caught.value)
    assert f"Refusing to write a kbert preset to {target}" in message
    assert "note0.txt, note1.txt, note2.txt, note3.txt, note4.txt and 2 more" in message
    assert "pass overwrite=True (or --overwrite)" in message
    assert isinstance(caught.value, FileExistsError)
    assert isinstance(caught.value, ValueError)  # the command line reports it
    assert os.path.exists(target / "note6.txt")


def test_overwrite_says_so_once(tmp_path, capsys):
    write(tmp_path / "hf" / "README.md")
    assert check_target(tmp_path / "hf", "hf", overwrite=True) == ["README.md"]
    assert check_target(tmp_path / "hf", "hf", overwrite=True) == ["README.md"]
    err = capsys.readouterr().err
    assert err.count("overwrite=True: replacing") == 1 and "README.md" in err


def test_own_files_nested_kinds_and_leftover_temporaries(tmp_path):
    run = tmp_path / "run"
    for name in ("vocab.txt", "data/train/data-00000.tfrecord", "run/metrics.jsonl"):
        write(run / name)
    write(run / "model" / "backbone.json")
    write(run / ".vocab.txt.tmp-999999-abc")  # a killed writer's temporary
    assert foreign_files(run, "pretraining_output") == []
    write(run / "model" / "notes.txt")
    assert foreign_files(run, "pretraining_output") == ["model/notes.txt"]
    write(tmp_path / "ft" / "preset" / "task.json")
    write(tmp_path / "ft" / "results.json")
    assert foreign_files(tmp_path / "ft", "finetune_output") == []
    demo = tmp_path / "demo"  # the main job's output: its files, a preset, a SavedModel
    for name in ("results.json", "classifier.onnx", "preset/task.json"):
        write(demo / name)
    write(demo / "saved_model" / "1" / "variables" / "variables.index")
    assert foreign_files(demo, "sentiment_demo") == []
    write(tmp_path / "sm" / "variables" / "variables.index")
    write(tmp_path / "sm" / "saved_model.pb")
    write(tmp_path / "sm" / "extra" / "x")
    assert foreign_files(tmp_path / "sm", "saved_model") == ["extra/x"]


def test_file_targets_are_judged_by_name_and_content(tmp_path):
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"\x08\x07 graph bytes")
    assert foreign_files(onnx, "onnx") == ["model.onnx"]
    onnx.write_bytes(b"\x08\x07 ... kbert_export {} ...")
    assert foreign_files(onnx, "onnx") == []
    tflite = tmp_path / "model.tflite"
    tflite.write_bytes(b"\x1c\x00\x00\x00TFL3 kbert_export")
    assert foreign_files(tflite, "tflite") == []

    npy = tmp_path / "e.npy"
    np.save(npy, np.zeros((2, 3), "float32"))
    assert foreign_files(npy, "embeddings") == []
    np.save(npy, np.arange(3))  # the user's own array
    assert foreign_files(npy, "embeddings") == ["e.npy"]
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text(json.dumps({"text": "a", "label": 1}) + "\n")
    assert foreign_files(jsonl, "embeddings") == ["data.jsonl"]
    jsonl.write_text(json.dumps({"text": "a", "embedding": [0.1]}) + "\n")
    assert foreign_files(jsonl, "embeddings") == []
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert foreign_files(notes, "embeddings") == ["notes.txt"]
    png = tmp_path / "map.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n photo")
    assert foreign_files(png, "attention_map") == ["map.png"]


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        check_target(tmp_path / "x", "pickle")
    with pytest.raises(ValueError, match="overwrite must be True or False; got 'yes'"):
        check_target(tmp_path / "x", "hf", overwrite="yes")
    with pytest.raises(ValueError, match="it is a directory; a file goes there"):
        check_target(tmp_path, "onnx")


@pytest.mark.parametrize(
    "argv, target",
    [
        (["export", "{missing}", "--format", "onnx", "-o", "{dir}/model.onnx"], "file"),
        (["export", "{missing}", "--format", "tflite", "-o", "{dir}/m.tflite"], "file"),
        (["export", "{missing}", "--format", "saved_model", "-o", "{dir}/out"], "dir"),
        (["export", "{missing}", "--format", "openvino", "-o", "{dir}/out"], "dir"),
        (["export", "{missing}", "--format", "auto", "-o", "{dir}/out"], "dir"),
        (["convert", "{missing}", "{dir}/out"], "dir"),
        (["convert", "{missing}", "{dir}/out", "--to", "hf"], "dir"),
        (["finetune", "{missing}", "--out", "{dir}/out"], "dir"),
        (["pretrain", "--corpus", "{missing}", "--output", "{dir}/out"], "dir"),
        (["embed", "{missing}", "{dir}/e.npy"], "file"),
        (["attention", "{missing}", "text", "-o", "{dir}/a.png"], "file"),
    ],
    ids=[
        "onnx",
        "tflite",
        "saved_model",
        "openvino",
        "auto",
        "convert",
        "convert-hf",
        "finetune",
        "pretrain",
        "embed",
        "attention",
    ],
)
def test_commands_refuse_foreign_files_before_any_work(argv, target, tmp_path, capsys):
    # The input does not exist: had the command read it first, that would be the error.
    names = {"missing": str(tmp_path / "missing"), "dir": str(tmp_path)}
    argv = [arg.format(**names) for arg in argv]
    path = argv[2] if argv[0] in ("convert", "embed") else argv[-1]
    if target == "dir":
        write(os.path.join(path, "notes.txt"))
    else:
        write(path, "the user's own file")
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"kbert {argv[0]}: error: Refusing to write ")
    assert f" to {path}: it holds files kbert did not write" in error
    assert "--overwrite" in error
    kept = os.path.join(path, "notes.txt") if target == "dir" else path
    with open(kept) as file:
        assert file.read() in ("mine", "the user's own file")


def test_the_demo_refuses_foreign_files_before_any_work(tmp_path, monkeypatch, capsys):
    from kbert.finetuning import sentiment_demo

    class ReadsData(Exception):
        pass

    def reads_data(*args, **kwargs):
        raise ReadsData

    monkeypatch.setattr(sentiment_demo, "sentiment_splits", reads_data)
    write(tmp_path / "notes.txt")
    with pytest.raises(ForeignFilesError, match="a sentiment demo output directory"):
        sentiment_demo.run(str(tmp_path))  # refused before it reads its data
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(ReadsData):  # --overwrite: on to the work, and it says so
        sentiment_demo.run(str(tmp_path), overwrite=True)
    assert "overwrite=True: replacing" in capsys.readouterr().err
