"""A child started by `run_child` dies with its parent, even a SIGKILLed one."""

import os
import signal
import subprocess
import sys
import time

from kbert.utils import child_process
from kbert.utils.child_process import run_child
from kbert.utils.owned_temps import process_alive

# Imports the module by its path: importing kbert would cost seconds.
PARENT = """
import runpy, sys
run_child = runpy.run_path(sys.argv[1])["run_child"]
run_child(["-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"])
"""


def wait_until(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s"
        time.sleep(0.05)


def test_the_child_runs_as_python_would():
    result = run_child(
        ["-c", "import sys; print(sys.argv[1:], sys.path[0] == '')", "a", "b"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['a', 'b'] True\n"


def test_the_child_dies_with_its_killed_parent():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, child_process.__file__],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        child = int(parent.stdout.readline())  # the child prints once it runs
        assert process_alive(child)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
    try:
        wait_until(lambda: not process_alive(child), timeout=30)
    finally:
        if process_alive(child):
            os.kill(child, signal.SIGKILL)
