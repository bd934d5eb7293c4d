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
