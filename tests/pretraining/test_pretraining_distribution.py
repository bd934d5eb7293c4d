"""Distributed pretraining on simulated CPU devices: the losses of a few steps
equal those of a single-device run. JAX (8 host devices) runs on the jax
pass, TensorFlow's MirroredStrategy (2 logical CPUs) on the tensorflow pass;
each in a subprocess, since devices are fixed when the engine starts."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "distributed_losses.py")


def run(kind):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    result = subprocess.run(
        [sys.executable, SCRIPT, kind], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="keras.distribution runs on JAX"
)
def test_jax_data_and_model_parallel_match_single_device():
    out = run("jax")
    assert len(out["single"]) == 3 and out["single"][-1] < out["single"][0]
    assert "'batch': 8" in out["data_parallel_sharding"]
    np.testing.assert_allclose(out["data_parallel"], out["single"], rtol=2e-5)
    # 2 x 4 mesh; the intermediate kernel is split over the 4 model devices.
    assert "'batch': 2, 'model': 4" in out["model_parallel_sharding"]
    assert "P(None, 'model')" in out["model_parallel_sharding"]
    np.testing.assert_allclose(out["model_parallel"], out["single"], rtol=2e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.distribute")
def test_tf_mirrored_strategy_matches_single_device():
    out = run("mirrored")
    assert out["mirrored_sharding"] == "2 replicas"
    assert out["single"][-1] < out["single"][0]
    np.testing.assert_allclose(out["mirrored"], out["single"], rtol=2e-5)


def test_layout_map_shards_encoder_kernels():
    if keras.backend.backend() != "jax":
        pytest.skip("DeviceMesh layouts are for keras.distribution on JAX")
    from kbert.distributed.strategies import bert_layout_map

    devices = keras.distribution.list_devices()[:1]
    mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"), devices=devices)
    layout_map = bert_layout_map(mesh)
    axes = {
        path: layout_map[path].axes
        for path in (
            "transformer_layer_0/query/kernel",
            "transformer_layer_11/intermediate/kernel",
            "transformer_layer_0/intermediate/bias",
            "transformer_layer_2/attention_output/kernel",
            "transformer_layer_2/output/kernel",
        )
    }
    assert axes == {
        "transformer_layer_0/query/kernel": (None, "model"),
        "transformer_layer_11/intermediate/kernel": (None, "model"),
        "transformer_layer_0/intermediate/bias": ("model",),
        "transformer_layer_2/attention_output/kernel": ("model", None),
        "transformer_layer_2/output/kernel": ("model", None),
    }
    assert layout_map["transformer_layer_0/output_layer_norm/gamma"] is None
    assert layout_map["embeddings/token_embedding/embeddings"] is None
