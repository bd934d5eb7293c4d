"""Artifacts carry their checksum (issue 28): every export record holds the
sha256 of each file of its artifact, and `kbert verify` checks the bytes
before it loads anything, naming the file that changed, is missing, empty
or unreadable in one line (exit status 1, no traceback).

The checks are kbert's own Python, not a backend's: they run once, in the
PyTorch run (the TFLite file is written there by a TensorFlow subprocess).
"""

import hashlib
import json
import os
import shutil

import pytest

import kbert
from kbert.cli import main
from kbert.export.formats import RECORD_NAME
from kbert.export.onnx.metadata import embed_text
from kbert.export.record import read_record
from tests.export.export_helpers import tiny_model

pytestmark = pytest.mark.backend_independent

QUICK = ["--num-examples", "8", "--repeats", "1"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """`{format: path}`: one tiny classifier as ONNX, TFLite and OpenVINO IR,
    each record naming the `.keras` file it came from."""
    directory = tmp_path_factory.mktemp("checksums")
    model = tiny_model(num_classes=2)
    source = str(directory / "classifier.keras")
    model.save(source)
    paths = {
        "onnx": str(directory / "model.onnx"),
        "tflite": str(directory / "model.tflite"),
        "openvino": str(directory / "openvino"),
    }
    kbert.export.onnx(model, paths["onnx"], source=source)
    kbert.export.tflite(model, paths["tflite"], flavour="token_ids", source=source)
    # bf16 on an AMX CPU may flip a few of a tiny random model's predictions.
    kbert.export.openvino(model, paths["openvino"], source=source, min_agreement=0.5)
    return paths


def _verify(artifact, capsys, *flags):
    """`(exit status, stdout, stderr)` of `kbert verify artifact`."""
    status = main(["verify", artifact, *flags])
    out, err = capsys.readouterr()
    return status, out, err


def _one_error(err):
    """The one `kbert verify: error:` line of stderr; no traceback."""
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("kbert verify: error:")]
    assert len(errors) == 1, err
    return errors[0]


def _copy(path, tmp_path, name=None):
    target = str(tmp_path / (name or os.path.basename(path)))
    if os.path.isdir(path):
        shutil.copytree(path, target)
    else:
        shutil.copy(path, target)
    return target


def _flip_middle(path, count=4000, avoid=b""):
    """Inverts `count` bytes in the middle of the file (as a corruption
    would), clear of the bytes `avoid` (the record kept in the file)."""
    data = bytearray(open(path, "rb").read())
    start = len(data) // 2 - count // 2
    if avoid:
        at = bytes(data).find(avoid)
        assert at >= 0
        if start < at + len(avoid) and at < start + count:
            start = at - count - 1 if at > count else at + len(avoid)
    assert 0 <= start and start + count <= len(data)
    for i in range(start, start + count):
        data[i] ^= 0xFF
    with open(path, "wb") as file:
        file.write(data)


@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_a_files_record_holds_its_sha256(exported, kind):
    path = exported[kind]
    record = read_record(path)
    assert "sha256" in record
    digest = record["sha256"]
    data = open(path, "rb").read()
    # The file holds its own digest: it is hashed with those 64 digits as zeros.
    assert data.count(digest.encode()) == 1
    unset = data.replace(digest.encode(), b"0" * 64)
    assert digest == hashlib.sha256(unset).hexdigest()


def test_a_directorys_record_holds_the_sha256_of_each_file(exported):
    path = exported["openvino"]
    files = {}
    for root, _, names in os.walk(path):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), path)
            if relative != f"{RECORD_NAME}.json":
                with open(os.path.join(root, name), "rb") as file:
                    files[relative] = hashlib.sha256(file.read()).hexdigest()
    assert set(files) >= {"openvino_model.xml", "openvino_model.bin"}
    assert read_record(path).get("sha256") == files
    # A plain JSON file.
    with open(os.path.join(path, f"{RECORD_NAME}.json"), encoding="utf-8") as file:
        assert json.load(file)["sha256"] == files


@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_verify_names_a_file_whose_bytes_changed(exported, kind, tmp_path, capsys):
    path = _copy(exported[kind], tmp_path)
    record = read_record(path)
    _flip_middle(path, avoid=json.dumps(record, sort_keys=True).encode())
    status, out, err = _verify(path, capsys, *QUICK)
    assert status == 1
    assert "agreement" not in out and "|" not in out  # nothing was loaded or run
    line = _one_error(err)
    assert line.startswith(f"kbert verify: error: {path} changed since it was exported")
    recorded = record["sha256"]
    now = hashlib.sha256(
        open(path, "rb").read().replace(recorded.encode(), b"0" * 64)
    ).hexdigest()
    assert line == (
        f"kbert verify: error: {path} changed since it was exported: sha256 "
        f"{recorded[:12]}… recorded, {now[:12]}… now; re-export it."
    )


def test_verify_names_a_changed_file_of_a_directory(exported, tmp_path, capsys):
    path = _copy(exported["openvino"], tmp_path)
    weights = os.path.join(path, "openvino_model.bin")
    _flip_middle(weights, count=400)
    status, _, err = _verify(path, capsys, *QUICK)
    assert status == 1
    assert f"error: {weights} changed since it was exported: sha256 " in _one_error(err)


@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_verify_names_a_truncated_empty_garbage_or_missing_file(
    exported, kind, tmp_path, capsys
):
    data = open(exported[kind], "rb").read()
    for name, content in [
        ("truncated", data[: len(data) // 2]),
        ("empty", b""),
        ("garbage", bytes(range(256)) * 20),
        ("missing", None),
    ]:
        path = str(tmp_path / f"{name}.{kind}")
        if content is not None:
            with open(path, "wb") as file:
                file.write(content)
        status, _, err = _verify(path, capsys, *QUICK)
        assert status == 1, name
        line = _one_error(err)
        assert line.startswith(f"kbert verify: error: {path}"), line
        if name == "empty":
            assert "is empty (0 bytes)" in line
        if name == "missing":
            assert line.endswith("no such file or directory.")


def test_verify_names_a_file_the_record_lists_that_is_gone(exported, tmp_path, capsys):
    path = _copy(exported["openvino"], tmp_path)
    os.remove(os.path.join(path, "openvino_model.bin"))
    status, _, err = _verify(path, capsys, *QUICK)
    assert status == 1
    assert _one_error(err).startswith(
        f"kbert verify: error: {os.path.join(path, 'openvino_model.bin')} is missing: "
        "the export record lists it"
    )
    os.remove(os.path.join(path, "openvino_model.xml"))
    status, _, err = _verify(path, capsys, *QUICK)
    assert status == 1
    assert _one_error(err) == (
        f"kbert verify: error: {os.path.join(path, 'openvino_model.xml')} is missing "
        f"(its export record {RECORD_NAME}.json is there); re-export it."
    )


def test_a_record_without_checksums_still_verifies_with_a_note(exported, tmp_path, capsys):
    """Records written before checksums: verified as before, with a note."""
    path = str(tmp_path / "old.onnx")
    record = read_record(exported["onnx"])
    record.pop("sha256", None)
    data = open(exported["onnx"], "rb").read()
    with open(path, "wb") as file:
        file.write(embed_text(data, RECORD_NAME, json.dumps(record, sort_keys=True)))
    status, out, _ = _verify(path, capsys, *QUICK)
    assert status == 0
    assert (
        f"Note: {path}: its export record holds no checksum, so its bytes were not "
        "checked against the export (re-export it to record them)."
    ) in out
    assert "hold their bounds" in out


def test_a_load_failure_without_checksums_is_one_line(exported, tmp_path, capsys):
    """An old record's IR without its weights: the runtime's failure, named."""
    path = _copy(exported["openvino"], tmp_path)
    record_file = os.path.join(path, f"{RECORD_NAME}.json")
    record = read_record(path)
    record.pop("sha256", None)
    with open(record_file, "w", encoding="utf-8") as file:
        json.dump(record, file)
    os.remove(os.path.join(path, "openvino_model.bin"))
    status, _, err = _verify(path, capsys, *QUICK)
    assert status == 1
    line = _one_error(err)
    assert line.startswith(f"kbert verify: error: {path}: openvino on openvino ")
    assert "could not load or run it" in line
