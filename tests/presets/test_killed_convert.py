"""kill -9 while `kbert convert` writes over an earlier conversion: the earlier
preset stays whole, and the next run leaves no temporary behind."""

import hashlib
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import kbert
from kbert.cli import main
from kbert.utils.owned_temps import OWNED

SOURCE = "all_minilm_l6_v2"  # real weights: writing them takes long enough to be caught


def contents(directory):
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                found[os.path.relpath(path, directory)] = hashlib.sha256(
                    file.read()
                ).digest()
    return found


def embed(preset):
    embedder = kbert.BertTextEmbedder.from_preset(str(preset))
    return embedder.predict(["A preset written whole."], verbose=0)


def temporaries(directory):
    return [entry for entry in os.listdir(directory) if OWNED.match(entry)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
def test_kill_during_convert_keeps_the_previous_preset(tmp_path):
    target = tmp_path / "preset"
    argv = ["convert", SOURCE, str(target)]
    assert main(argv) == 0
    previous, embedding = contents(target), embed(target)
    root = os.path.dirname(os.path.dirname(kbert.__file__))
    convert = subprocess.Popen(
        [sys.executable, "-m", "kbert.cli", *argv],
        env=dict(os.environ, PYTHONPATH=root, KERAS_BACKEND=keras.backend.backend()),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not temporaries(tmp_path):  # the new preset is being written
            assert convert.poll() is None, convert.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the conversion never started writing"
            time.sleep(0.005)
    finally:
        convert.send_signal(signal.SIGKILL)
        convert.wait(timeout=60)
    assert convert.returncode == -signal.SIGKILL
    assert temporaries(tmp_path)  # killed mid-write: its temporary is still there
    assert contents(target) == previous  # the earlier preset, whole

    assert main(argv) == 0  # the same command again: done, and swept
    assert temporaries(tmp_path) == []
    assert os.listdir(tmp_path) == ["preset"]
    # The same conversion, whole (layer names in its JSON count up per process).
    assert contents(target).keys() == previous.keys()
    np.testing.assert_array_equal(embed(target), embedding)
