"""Output paths are checked before any work: the path and the problem named."""

import os
import sys

import pytest

import kbert
from kbert.cli import main
from kbert.utils.output_paths import check_output_path
from tests.test_case import tiny_backbone


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "afile.txt"
    path.write_text("not a directory")
    return path


def unwritable_directory(tmp_path):
    """A directory this process cannot create files in, root or not."""
    if os.geteuid() != 0:
        directory = tmp_path / "locked"
        directory.mkdir()
        directory.chmod(0o500)  # pytest's tmp_path cleanup copes with it
        return directory
    # Root writes through permission bits; sysfs takes no new files from anyone.
    if not sys.platform.startswith("linux") or not os.path.isdir("/sys/kernel"):
        pytest.skip("running as root without a sysfs to stand for an unwritable place")
    return "/sys/kernel"


def test_parent_is_a_file(a_file):
    with pytest.raises(ValueError, match="afile.txt is a file, not a directory"):
        check_output_path(a_file / "model.onnx", "file")
    with pytest.raises(ValueError, match=f"Cannot write {a_file}/deeper/preset"):
        check_output_path(a_file / "deeper" / "preset", "directory")


def test_unwritable_parent(tmp_path):
    directory = unwritable_directory(tmp_path)
    with pytest.raises(ValueError, match=f"{directory} is not writable"):
        check_output_path(os.path.join(directory, "out", "preset"), "directory")
    with pytest.raises(ValueError, match=f"Cannot write {directory}: .* is not writable"):
        check_output_path(directory, "directory")  # a run resumed in it


def test_target_of_the_wrong_kind(tmp_path, a_file):
    with pytest.raises(ValueError, match="afile.txt: it is a file; a directory goes"):
        check_output_path(a_file, "directory")
    with pytest.raises(ValueError, match=f"{tmp_path}: it is a directory; a file goes"):
        check_output_path(tmp_path, "file")


def test_a_good_path_is_left_untouched(tmp_path):
    check_output_path(tmp_path / "new" / "deeper" / "model.onnx", "file")
    check_output_path(tmp_path / "preset", "directory")
    assert os.listdir(tmp_path) == []  # nothing made, no probe left


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "{missing}", "--format", "onnx", "-o", "{file}/model.onnx"],
        ["export", "{missing}", "--format", "saved_model", "-o", "{file}"],
        ["convert", "{missing}", "{file}/preset"],
        ["convert", "{missing}", "{file}", "--to", "hf"],
        ["finetune", "{missing}", "--out", "{file}/run"],
        ["pretrain", "--corpus", "{missing}", "--output", "{file}"],
        ["embed", "{missing}", "{file}/embeddings.npy"],
    ],
    ids=["export", "export-dir", "convert", "convert-hf", "finetune", "pretrain", "embed"],
)
def test_commands_check_the_output_before_reading_the_input(argv, tmp_path, a_file, capsys):
    # The input does not exist: had the command read it first, that would be the error.
    names = {"missing": str(tmp_path / "missing"), "file": str(a_file)}
    assert main([arg.format(**names) for arg in argv]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"kbert {argv[0]}: error: Cannot write {a_file}")
    assert "missing" not in error and "Traceback" not in error


def test_writers_check_the_output_before_touching_the_model(tmp_path, a_file):
    # None as the model: any work before the check would fail on it first.
    for write in (
        kbert.save_hf,
        kbert.export.saved_model,
        kbert.export.onnx,
        kbert.export.tflite,
        kbert.export.openvino,
    ):
        with pytest.raises(ValueError, match=f"Cannot write {a_file}/out"):
            write(None, a_file / "out")
    with pytest.raises(ValueError, match=f"Cannot write {a_file}/preset"):
        tiny_backbone().save_to_preset(a_file / "preset")
    with pytest.raises(ValueError, match=f"Cannot write {tmp_path}: it is a directory"):
        kbert.export.onnx(None, tmp_path)
