"""`import kbert` prints no TensorFlow/absl/CUDA lines; KBERT_VERBOSE=1 does."""

import os
import re
import subprocess
import sys

import keras

from kbert.utils.quiet import NATIVE_LOG_LINE, has_gpu

PROGRAM = """
import kbert
import kbert.data
import tensorflow as tf
tf.constant(1)  # TensorFlow's first op, where it looks for CUDA
tokenizer = kbert.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "fox"])
print(tokenizer(["a fox"]))
"""


def _stderr(first_import="", **env):
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("TF_CPP_MIN_LOG_LEVEL", "KBERT_VERBOSE", "JAX_PLATFORMS")
    }
    environment.update(KERAS_BACKEND=keras.backend.backend(), **env)
    result = subprocess.run(
        [sys.executable, "-c", first_import + PROGRAM],
        env=environment,
        capture_output=True,
        timeout=300,
        check=True,
    )
    assert b"[4, 5]" in result.stdout
    return result.stderr


def _native_lines(stderr):
    return [line for line in stderr.splitlines() if NATIVE_LOG_LINE.match(line)]


def test_the_library_is_quiet_and_verbose_on_request():
    orders = [""]
    if keras.backend.backend() != "tensorflow":  # Keras on TF loads TF before kbert
        orders.append("import keras\n")  # JAX (or torch) loaded before kbert
    for first_import in orders:
        quiet = _stderr(first_import)
        assert _native_lines(quiet) == [], (first_import, quiet.decode()[-2000:])
        assert not re.search(rb"cuInit|cuda", quiet, re.IGNORECASE), quiet.decode()[-2000:]
    if not has_gpu():  # TensorFlow says it found no CUDA driver
        assert _native_lines(_stderr(KBERT_VERBOSE="1"))
