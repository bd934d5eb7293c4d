"""Torch inference's attention on transposed views equals Keras' op, masks
included, and stays out of training and the other backends."""

import keras
import numpy as np
import pytest

from kbert.layers.torch_attention import torch_inference_attention


def inputs(dtype):
    rng = np.random.default_rng(0)
    query, key, value = (rng.normal(size=(2, 5, 3, 4)) for _ in range(3))
    mask = np.ones((2, 1, 1, 5), bool)
    mask[0, ..., 3:] = False  # padding
    mask[1] = False  # no key to attend to: Keras averages every value
    return [keras.ops.convert_to_tensor(x, dtype) for x in (query, key, value)], mask


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch inference only")
@pytest.mark.parametrize("dtype,tolerance", [("float32", 1e-6), ("bfloat16", 2e-2)])
def test_equals_keras_dot_product_attention(dtype, tolerance):
    import torch

    (query, key, value), mask = inputs(dtype)
    with torch.no_grad():
        actual = torch_inference_attention(query, key, value, mask, large_negative=-1e9)
        expected = keras.ops.dot_product_attention(query, key, value, mask=mask)
    assert actual.dtype == expected.dtype == getattr(torch, dtype)
    as_float = [
        keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")) for x in (actual, expected)
    ]
    np.testing.assert_allclose(*as_float, rtol=0, atol=tolerance)
    # the unattended row is the mean of the values, not NaN
    mean = keras.ops.convert_to_numpy(
        keras.ops.cast(keras.ops.mean(value[1], 0), "float32")
    )
    np.testing.assert_allclose(
        as_float[0][1], np.broadcast_to(mean, (5, 3, 4)), atol=tolerance
    )
    # training (autograd on) takes Keras' op
    assert torch_inference_attention(query, key, value, mask, large_negative=-1e9) is None


@pytest.mark.backend_independent
def test_not_taken_on_other_backends(monkeypatch):
    (query, key, value), mask = inputs("float32")
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    assert torch_inference_attention(query, key, value, mask, large_negative=-1e9) is None
