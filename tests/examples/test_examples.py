"""Every example runs end to end in its smoke mode, so none of them rots.

The examples are backend-agnostic scripts over the tested library, so each
runs once per suite: the sentiment example, `make demo`'s job, in the JAX
run (the backend `examples/demo.py` uses); the two that only run real
MiniLM inference in the PyTorch run, where Keras compiles nothing (in the
JAX run they took 37 s and 30 s of an Intel Xeon with AMX, 2026-12-01).
The sentiment example fine-tunes and exports a two-layer classifier (its
`--preset` flag): the whole job and its output stay checked, while the
conversions of real MiniLM weights are the exporters' tests' work (this
test took 248 s of the JAX run with MiniLM, 107 s with two layers).
"""

import os
import subprocess
import sys

import keras
import pytest

from tests.export.export_helpers import tiny_model

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
SMOKE = {
    "sentiment_classification.py": [
        "--smoke",
        "--out",
        "{tmp}/out",
        "--preset",
        "{tmp}/tiny",
    ],
    "semantic_search.py": ["--smoke"],
    "feature_extraction.py": ["--smoke"],
}
BACKEND = {
    "sentiment_classification.py": "jax",
    "semantic_search.py": "torch",
    "feature_extraction.py": "torch",
}
EXPECTED_OUTPUT = {
    "sentiment_classification.py": "| classifier.onnx",
    "semantic_search.py": "heartwarming",
    "feature_extraction.py": "Logistic regression test accuracy:",
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_example_smoke_run(script, tmp_path):
    if keras.backend.backend() != BACKEND[script]:
        pytest.skip(f"{script} runs once, in the {BACKEND[script]} run")
    arguments = [a.format(tmp=tmp_path) for a in SMOKE[script]]
    if "--preset" in arguments:
        # the demo recipe reads 48 tokens; tiny_model holds 32 by default
        tiny_model(num_classes=2, max_sequence_length=64).save_to_preset(tmp_path / "tiny")
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *arguments],
        env={**os.environ, "KERAS_BACKEND": BACKEND[script], "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert EXPECTED_OUTPUT[script] in result.stdout
