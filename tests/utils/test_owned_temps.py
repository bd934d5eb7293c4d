"""Temporaries named after their owner's pid are swept once the owner is gone."""

import os
import subprocess
import sys
import tempfile

from kbert.utils.atomic import atomic_directory, atomic_file
from kbert.utils.owned_temps import process_alive, sweep_work_directories, work_directory


def dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=60)
    assert not process_alive(process.pid)
    return process.pid


def test_the_next_write_sweeps_what_dead_writers_left(tmp_path):
    dead, alive = dead_pid(), os.getpid()
    (tmp_path / "model.onnx").write_text("old")
    (tmp_path / f".model.onnx.tmp-{dead}-abc").write_text("half")
    (tmp_path / f".model.onnx.tmp-{alive}-def").write_text("being written")
    (tmp_path / f".preset.tmp-{dead}-ghi").mkdir()
    (tmp_path / f".preset.tmp-{dead}-ghi" / "config.json").write_text("{}")
    with atomic_file(tmp_path / "model.onnx") as tmp, open(tmp, "w") as file:
        file.write("new")
    with atomic_directory(tmp_path / "preset"):
        pass
    assert sorted(os.listdir(tmp_path)) == [
        f".model.onnx.tmp-{alive}-def",  # its owner runs: left alone
        "model.onnx",
        "preset",
    ]
    assert (tmp_path / "model.onnx").read_text() == "new"


def test_a_writer_killed_between_its_two_renames_gets_its_target_back(tmp_path):
    # atomic_directory moves the previous target into `.old-` before renaming
    # the new one in; killed in between, the previous one is restored.
    old = tmp_path / f".preset.old-{dead_pid()}-abc"
    (old / "previous").mkdir(parents=True)
    (old / "previous" / "config.json").write_text("previous")
    try:
        with atomic_directory(tmp_path / "preset"):
            raise RuntimeError("interrupted")
    except RuntimeError:
        pass
    assert os.listdir(tmp_path) == ["preset"]
    assert (tmp_path / "preset" / "config.json").read_text() == "previous"


def test_work_directories_of_dead_processes_are_swept():
    root = tempfile.gettempdir()
    stale = os.path.join(root, f"kbert-serving-{dead_pid()}-abc123")
    os.makedirs(os.path.join(stale, "inside"))
    with work_directory("serving") as work:
        assert os.path.basename(work).startswith(f"kbert-serving-{os.getpid()}-")
        sweep_work_directories()  # this process's own directory stays
        assert os.path.isdir(work)
    assert not os.path.exists(stale) and not os.path.exists(work)
