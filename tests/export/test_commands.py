"""`kbert export` / `kbert verify` (parsers and handlers), and lazy imports."""

import argparse
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.export import ExportVerificationError, agreement
from kbert.export.commands import add_export_command, add_verify_command
from kbert.export.openvino.runner import OpenVinoRunner, openvino_version
from kbert.export.record import read_record
from tests.export.export_helpers import features, keras_outputs, near_ties, tiny_model


def _parser():
    parser = argparse.ArgumentParser(prog="kbert")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_export_command(subparsers)
    add_verify_command(subparsers)
    return parser


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the commands are backend-agnostic; each backend's exporters have their own tests",
)
def test_export_then_verify_prints_the_table(tmp_path, capsys):
    model = tiny_model(num_classes=2, id2label={0: "rotten", 1: "fresh"})
    source = str(tmp_path / "classifier.keras")
    model.save(source)
    artifact = str(tmp_path / "classifier.onnx")
    with open(artifact, "w") as file:
        file.write("the user's own file")

    export = ["export", source, "--format", "onnx", "-o", artifact]
    args = _parser().parse_args(export)
    with pytest.raises(ValueError, match="--overwrite"):  # refused before any work
        args.handler(args)
    args = _parser().parse_args([*export, "--overwrite"])
    assert args.handler(args) == 0
    assert "overwrite=True: replacing" in capsys.readouterr().err
    assert read_record(artifact)["format"] == "onnx"

    # Labelled examples of the user's: accuracy on them, labels by name or id.
    texts = ["a good film", "a bad movie", "great fun", "boring plot", "not very good"]
    labels = ["fresh", "rotten", "1", "0", "rotten"]
    data = tmp_path / "labelled.csv"
    data.write_text(
        "review,verdict\n" + "".join(f"{t},{y}\n" for t, y in zip(texts, labels))
    )
    predicted = np.argmax(keras_outputs(model, features(model, texts))["logits"], -1)
    accuracy = np.mean(predicted == np.array([1, 0, 1, 0, 0]))
    command = ["verify", artifact, "--repeats", "2", "--data", str(data)]
    command += ["--text-column", "review", "--label-column", "verdict"]
    args = _parser().parse_args(command)
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("|")]
    header, _, keras_line, onnx_line, openvino_line, openvino_f32_line = table
    assert header.split("|")[1].strip() == "artifact"
    assert "All 3 artifact rows hold their bounds." in out  # the gate: exit status 0
    assert "keras" in keras_line and "onnxruntime" in onnx_line
    precision = OpenVinoRunner(artifact).precision  # what OpenVINO picks on this CPU
    assert f"OpenVINO {openvino_version()} CPU ({precision}) default" in openvino_line
    assert "CPU (f32) forced" in openvino_f32_line
    for line in (onnx_line, openvino_f32_line):
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert float(cells[4]) <= 1e-4  # max |diff|
        assert float(cells[5]) == pytest.approx(accuracy, abs=1e-3)  # on the 5 examples
        assert float(cells[6]) >= 0.9  # agreement with Keras
    cells = [c.strip() for c in openvino_line.split("|")[1:-1]]
    assert float(cells[6]) >= 0.9
    assert float(keras_line.split("|")[6]) == pytest.approx(accuracy, abs=1e-3)

    # Without labelled data: agreement only, never a guessed data set.
    args = _parser().parse_args(
        ["verify", artifact, "--repeats", "2", "--num-examples", "8"]
    )
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    onnx_line = next(line for line in out.splitlines() if "onnxruntime" in line)
    assert onnx_line.split("|")[6].strip() == "n/a"
    assert "pass --data FILE --text-column C --label-column L" in out

    first = os.stat(artifact).st_ino
    args = _parser().parse_args(export)  # kbert's own file now: replaced, no flag
    assert args.handler(args) == 0
    assert os.stat(artifact).st_ino != first


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the command is backend-agnostic"
)
def test_verify_names_the_artifact_and_the_flag_when_the_source_is_missing(tmp_path):
    model = tiny_model(num_classes=2)
    source = tmp_path / "classifier.keras"
    model.save(str(source))
    artifact = str(tmp_path / "classifier.onnx")
    args = _parser().parse_args(["export", str(source), "--format", "onnx", "-o", artifact])
    assert args.handler(args) == 0
    os.remove(source)
    args = _parser().parse_args(["verify", artifact])
    with pytest.raises(
        ValueError, match=r"classifier\.onnx: cannot load its source model.*--model"
    ):
        args.handler(args)


def test_verify_refuses_labels_the_model_does_not_have(tmp_path):
    from kbert.export.measurements import label_ids

    model = tiny_model(num_classes=2, id2label={0: "rotten", 1: "fresh"})
    assert label_ids(model, ["fresh", 0, " 1 "]) == [1, 0, 1]
    with pytest.raises(ValueError, match=r"data.csv: label 'meh' of example 2.*'fresh'"):
        label_ids(model, ["fresh", "meh"], "data.csv")


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the flags are backend-agnostic; quantization is tested per backend "
    "in test_onnx_quantization",
)
def test_export_quantization_flags_reach_the_exporter(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 128)  # two exports: keep it short
    model = tiny_model(num_classes=2)
    near_ties(model)  # so that quantization flips some reviews
    source = str(tmp_path / "classifier.keras")
    model.save(source)
    artifact = tmp_path / "classifier_int8.onnx"
    command = ["export", source, "--format", "onnx", "-o", str(artifact)]
    command += ["--quantization", "dynamic_int8"]
    args = _parser().parse_args(command + ["--min-agreement", "1.0"])
    with pytest.raises(ExportVerificationError, match="--min-agreement"):
        args.handler(args)
    assert not artifact.exists()
    args = _parser().parse_args(command + ["--min-agreement", "0.5"])
    assert args.handler(args) == 0
    record = read_record(str(artifact))
    assert record["quantization"] == "dynamic_int8"
    assert record["quantized"]["agreement"]["min_agreement"] == 0.5
    assert "Quantized:" in capsys.readouterr().out


def test_export_parser_rejects_unknown_format():
    with pytest.raises(SystemExit):
        _parser().parse_args(["export", "m", "--format", "coreml", "-o", "x"])


def test_import_kbert_export_does_not_import_tensorflow():
    code = (
        "import sys, kbert, kbert.export; "
        "print(sorted(m for m in ('tensorflow', 'onnx', 'onnxruntime', 'torch', "
        "'tf2onnx', 'mediapipe', 'openvino') if m in sys.modules))"
    )
    backend = "jax" if keras.backend.backend() == "tensorflow" else keras.backend.backend()
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, KERAS_BACKEND=backend),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = eval(result.stdout.strip().splitlines()[-1])
    assert imported == (["torch"] if backend == "torch" else [])
