"""kill -9 while `kbert convert` writes over an earlier conversion: the earlier
preset stays whole, and the next run leaves no temporary behind.

The conversion kills itself once the new preset is written in full beside the
target and not yet renamed onto it: the moment with the most written and
nothing committed. (Killing it from outside when its temporary appeared
raced with the rename: under load the conversion could finish first.)
"""

import hashlib
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

import kbert
from kbert.cli import main
from kbert.utils.owned_temps import OWNED

SOURCE = "all_minilm_l6_v2"  # real weights
# `kbert convert ARGS`, killed by SIGKILL right before its preset is committed.
KILLED_BEFORE_COMMIT = """
import os, signal, sys
import kbert.utils.atomic
kbert.utils.atomic.follow_umask = lambda path: os.kill(os.getpid(), signal.SIGKILL)
from kbert.cli import main
sys.exit(main(sys.argv[1:]))
"""


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
    convert = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_COMMIT, *argv],
        env=dict(os.environ, PYTHONPATH=root, KERAS_BACKEND=keras.backend.backend()),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=300,
    )
    assert convert.returncode == -signal.SIGKILL, convert.stderr.decode()[-2000:]
    written = temporaries(tmp_path)  # killed before the commit: the new preset is beside it
    assert len(written) == 1 and contents(tmp_path / written[0]).keys() == previous.keys()
    assert contents(target) == previous  # the earlier preset, whole

    assert main(argv) == 0  # the same command again: done, and swept
    assert temporaries(tmp_path) == []
    assert os.listdir(tmp_path) == ["preset"]
    # The same conversion, whole (layer names in its JSON count up per process).
    assert contents(target).keys() == previous.keys()
    np.testing.assert_array_equal(embed(target), embedding)
