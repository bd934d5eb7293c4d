"""Every example runs end to end in its smoke mode, so none of them rots.

The examples are backend-agnostic scripts over the tested library, so they
run once per suite, in the JAX run (the backend `examples/demo.py` uses).
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
EXPECTED_OUTPUT = {
    "sentiment_classification.py": "| classifier.onnx",
    "semantic_search.py": "heartwarming",
    "feature_extraction.py": "Logistic regression test accuracy:",
}


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="examples run in the JAX run")
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_example_smoke_run(script, tmp_path):
    arguments = [a.format(tmp=tmp_path) for a in SMOKE[script]]
    if "--preset" in arguments:
        # the demo recipe reads 48 tokens; tiny_model holds 32 by default
        tiny_model(num_classes=2, max_sequence_length=64).save_to_preset(tmp_path / "tiny")
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *arguments],
        env={**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert EXPECTED_OUTPUT[script] in result.stdout
