"""Atomic writes: whole artifact or nothing, with the user's usual permissions."""

import os

import pytest

from kbert.utils.atomic import atomic_directory, atomic_file


def test_atomic_file_appears_whole_with_umask_permissions(tmp_path):
    path = tmp_path / "out" / "values.txt"
    with atomic_file(path) as tmp:
        with open(tmp, "w") as file:
            file.write("done")
    assert path.read_text() == "done"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert os.listdir(path.parent) == ["values.txt"]


def test_atomic_file_failure_keeps_the_previous_file(tmp_path):
    path = tmp_path / "values.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as tmp:
            with open(tmp, "w") as file:
                file.write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["values.txt"]


def test_atomic_directory_replaces_only_on_success(tmp_path):
    path = tmp_path / "preset"
    with atomic_directory(path) as tmp:
        open(os.path.join(tmp, "a.json"), "w").close()
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o777 & ~umask
    with pytest.raises(RuntimeError):
        with atomic_directory(path) as tmp:
            open(os.path.join(tmp, "b.json"), "w").close()
            raise RuntimeError("interrupted")
    assert os.listdir(path) == ["a.json"]
    with atomic_directory(path) as tmp:
        open(os.path.join(tmp, "c.json"), "w").close()
    assert os.listdir(path) == ["c.json"]
    assert os.listdir(tmp_path) == ["preset"]


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_written_files_follow_the_umask(tmp_path, umask):
    # safetensors and mkstemp make their files 0600; kbert's follow the umask.
    import kbert
    from tests.export.export_helpers import tiny_model

    model = tiny_model(num_classes=2)
    previous = os.umask(umask)
    try:
        kbert.save_hf(model, tmp_path / "hf")
        model.save_to_preset(tmp_path / "preset")
        with atomic_file(tmp_path / "embeddings.npy") as tmp, open(tmp, "wb") as file:
            file.write(b"\x93NUMPY")
    finally:
        os.umask(previous)
    files = [tmp_path / "embeddings.npy"]
    directories = [tmp_path / "hf", tmp_path / "preset"]
    for top in directories[:]:
        for directory, folders, names in os.walk(top):
            files += [os.path.join(directory, name) for name in names]
            directories += [os.path.join(directory, name) for name in folders]
    assert "model.safetensors" in os.listdir(tmp_path / "hf")
    assert len(files) > 8
    assert {path: oct(os.stat(path).st_mode & 0o777) for path in files} == {
        path: oct(0o666 & ~umask) for path in files
    }
    assert {path: oct(os.stat(path).st_mode & 0o777) for path in directories} == {
        path: oct(0o777 & ~umask) for path in directories
    }
