"""Exporters refuse a target with the user's files, replace their own artifacts."""

import os

import keras
import pytest

import kbert
from kbert.export.record import read_record
from kbert.utils.artifact_kinds import ForeignFilesError
from tests.export.export_helpers import tiny_model

EXPORTERS = {
    "onnx": ("model.onnx", False),
    "tflite": ("model.tflite", False),
    "saved_model": ("saved_model", True),
    "openvino": ("openvino", True),
}


def users_file(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(b"the user's own bytes")
    return path


@pytest.mark.parametrize("name", EXPORTERS)
def test_every_exporter_refuses_before_any_work(name, tmp_path):
    target, directory = EXPORTERS[name]
    path = str(tmp_path / target)
    kept = users_file(os.path.join(path, "notes.txt") if directory else path)
    exporter = getattr(kbert.export, name)
    with pytest.raises(ForeignFilesError, match="overwrite=True"):
        exporter(None, path)  # no model needed: refused before it is touched
    with open(kept, "rb") as file:
        assert file.read() == b"the user's own bytes"


# ONNX on every backend; the others (the same check) where they export
# natively, to keep the extra exports cheap.
REPLACED = ["onnx"] + (
    ["tflite", "openvino", "saved_model"] if keras.backend.backend() == "tensorflow" else []
)


@pytest.mark.parametrize("name", REPLACED)
def test_overwrite_then_its_own_artifact_replaced(name, tmp_path, capsys):
    model = tiny_model(num_classes=2)
    target, directory = EXPORTERS[name]
    path = str(tmp_path / target)
    # someone else's file of that name (or in that directory)
    users_file(os.path.join(path, "notes.txt") if directory else path)
    exporter = getattr(kbert.export, name)
    exporter(model, path, overwrite=True)
    assert "overwrite=True: replacing" in capsys.readouterr().err
    assert read_record(path)["format"] == name
    assert not os.path.exists(os.path.join(path, "notes.txt"))
    first = os.stat(path).st_ino
    exporter(model, path)  # kbert's own: replaced (a new inode), no flag needed
    assert os.stat(path).st_ino != first
    assert os.listdir(tmp_path) == [target]


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="a SavedModel is traced on TensorFlow; other backends go through the same check",
)
def test_saved_model_replaces_its_own_directory(tmp_path):
    # Overwriting goes through the same check as ONNX's; one export stays cheap.
    path = str(tmp_path / "saved_model")
    users_file(os.path.join(path, "saved_model.pb"))  # a previous SavedModel's files
    users_file(os.path.join(path, "variables", "stale.data"))
    kbert.export.saved_model(tiny_model(num_classes=2), path)
    assert not os.path.exists(os.path.join(path, "variables", "stale.data"))
    assert read_record(path)["format"] == "saved_model"
    assert os.listdir(tmp_path) == ["saved_model"]
