"""kill -9 in the middle of an export: no child outlives it, the next run cleans up."""

import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

import keras
import pytest

import kbert
from kbert.cli import main
from kbert.utils.owned_temps import process_alive
from tests.export.export_helpers import tiny_model

SECONDS_TO_REACH_VERIFICATION = 400  # imports kbert, then TensorFlow once or twice


def process_tree(root):
    """`{pid: parent pid}` of every process under `root`, from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as file:
                parents[int(entry)] = int(file.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError):
            continue
    tree, frontier = {}, [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree.update((pid, parents[pid]) for pid in children)
        frontier = children
    return tree


def descendants(root):
    """Pids of every process under `root`, from /proc."""
    return list(process_tree(root))


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def leftovers(directory, pids):
    """Entries of `directory` named after one of `pids`."""
    owned = re.compile(r"-(\d+)-")
    return [
        entry
        for entry in os.listdir(directory)
        if any(int(pid) in pids for pid in owned.findall(entry))
    ]


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)
def test_kill_during_a_saved_model_export_leaves_nothing_behind(tmp_path):
    source = tmp_path / "preset"
    tiny_model(num_classes=2).save_to_preset(source)
    target = tmp_path / "exported" / "1"
    argv = ["export", str(source), "--format", "saved_model", "-o", str(target)]
    root = os.path.dirname(os.path.dirname(kbert.__file__))
    with open(tmp_path / "stderr.txt", "w") as stderr:
        export = subprocess.Popen(
            [sys.executable, "-m", "kbert.cli", *argv],
            env=dict(os.environ, PYTHONPATH=root, KERAS_BACKEND=keras.backend.backend()),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        # Kill once the SavedModel verifier (the serving process) runs; the
        # process tree seen then, with each process's command line.
        seen = {}

        def verifying():
            assert export.poll() is None, (tmp_path / "stderr.txt").read_text()
            tree = process_tree(export.pid)
            lines = {pid: command_line(pid) for pid in tree}
            seen.update(tree=tree, lines=lines)
            return any("serving_process.py" in line for line in lines.values())

        wait_until(verifying, SECONDS_TO_REACH_VERIFICATION, "the verifier to start")
        children = descendants(export.pid)
    finally:
        export.send_signal(signal.SIGKILL)
        export.wait(timeout=60)
    pids = {export.pid, *children}
    try:
        wait_until(
            lambda: not any(process_alive(pid) for pid in children),
            30,
            "the children of the killed export to die",
        )
    finally:
        for pid in children:
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)
    # The verifier is the exporter's child on TensorFlow; on JAX and torch a
    # grandchild, the child of the TensorFlow subprocess that converts.
    tree, lines = seen["tree"], seen["lines"]
    serving = [pid for pid, line in lines.items() if "serving_process.py" in line]
    assert len(serving) == 1, lines
    parent = tree[serving[0]]
    if keras.backend.backend() == "tensorflow":
        assert parent == export.pid, lines
    else:
        assert parent != export.pid and tree[parent] == export.pid, lines
        assert "kbert.export.on_tensorflow" in lines[parent], lines
    # What the kill left: temporaries beside the target and in the temp dir.
    assert leftovers(target.parent, pids)
    assert any(
        entry.startswith("kbert-serving-")
        for entry in leftovers(tempfile.gettempdir(), pids)
    )

    umask = os.umask(0o002)
    try:
        assert main(argv) == 0  # the same command, run again
    finally:
        os.umask(umask)
    assert os.listdir(target.parent) == ["1"]
    assert leftovers(tempfile.gettempdir(), pids) == []
    for directory, folders, files in os.walk(target):
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o664
        for name in folders:
            assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o775
    assert stat.S_IMODE(target.stat().st_mode) == 0o775
