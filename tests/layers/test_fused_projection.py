"""Torch inference's `linear` path (query/key/value fused, every other Dense
of the layer on its own) equals Keras' Dense layers, follows every weight
write, and stays out of training."""

import keras
import numpy as np
import pytest

from kbert.layers.fused_projection import FusedProjection
from kbert.layers.transformer import BertTransformerLayer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="the fused path is torch inference only"
)


def layer_and_input():
    keras.utils.set_random_seed(0)
    layer = BertTransformerLayer(num_heads=2, intermediate_dim=16, dropout=0.0)
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    layer.build(x.shape)
    return layer, x


def outputs(layer, x, fused):
    import torch

    call = FusedProjection.__call__
    if not fused:
        FusedProjection.__call__ = lambda self, x: None
    try:
        with torch.no_grad():
            return keras.ops.convert_to_numpy(layer(x))
    finally:
        FusedProjection.__call__ = call


def test_fused_inference_equals_separate_layers_and_follows_weight_writes():
    layer, x = layer_and_input()
    same = dict(rtol=0, atol=1e-6)  # the same products; bit-equal where measured
    np.testing.assert_allclose(outputs(layer, x, True), outputs(layer, x, False), **same)
    before = outputs(layer, x, True)
    # assign (set_weights, load_weights and optimizers write in place too)
    layer.key.kernel.assign(layer.key.kernel.numpy() * 2.0)
    layer.value.bias.assign(np.ones(8, "float32"))
    layer.intermediate.kernel.assign(layer.intermediate.kernel.numpy() * 3.0)
    after = outputs(layer, x, True)
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_allclose(after, outputs(layer, x, False), **same)
    weights = layer.get_weights()
    weights[0] = weights[0] * 0.5  # query kernel
    layer.set_weights(weights)
    np.testing.assert_allclose(outputs(layer, x, True), outputs(layer, x, False), **same)


def test_not_used_with_autograd_or_mixed_precision():
    import torch

    layer, x = layer_and_input()
    projection = FusedProjection((layer.query, layer.key, layer.value))
    with torch.no_grad():
        assert tuple(projection(x).shape) == (2, 5, 24)
        # an activation applies to one Dense's output, never to a concatenation
        assert FusedProjection((layer.query, layer.intermediate))(x) is None
    # Training: gradients must reach each kernel, so the layers run separately.
    assert projection(x) is None
    out = layer(torch.from_numpy(x), training=True)
    out.sum().backward()
    assert all(
        d.kernel.value.grad is not None for d in (layer.query, layer.key, layer.value)
    )
    mixed = BertTransformerLayer(num_heads=2, intermediate_dim=16, dtype="mixed_bfloat16")
    mixed.build(x.shape)
    with torch.no_grad():
        assert FusedProjection((mixed.query, mixed.key, mixed.value))(x) is None


def test_each_dense_runs_as_keras_runs_it_in_float32_and_bfloat16():
    import torch

    for dtype, tolerance in (("float32", 1e-6), ("bfloat16", 1e-2)):
        layer = BertTransformerLayer(num_heads=2, intermediate_dim=16, dtype=dtype)
        x = np.random.default_rng(1).normal(size=(2, 5, 8))
        layer.build(x.shape)
        x = keras.ops.convert_to_tensor(x, dtype)
        for dense in (layer.attention_output, layer.intermediate, layer.output_dense):
            inputs = x if dense is not layer.output_dense else layer.intermediate(x)
            with torch.no_grad():
                fused = FusedProjection((dense,))(inputs)
                expected = dense.call(inputs)
            assert fused.dtype == expected.dtype == getattr(torch, dtype), dense.name
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(keras.ops.cast(fused, "float32")),
                keras.ops.convert_to_numpy(keras.ops.cast(expected, "float32")),
                rtol=0,
                atol=tolerance,
                err_msg=dense.name,
            )
