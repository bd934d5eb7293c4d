"""BertTransformerLayer through the layer harness."""

import numpy as np

from kbert.layers.transformer import BertTransformerLayer
from tests.test_case import run_layer_test


def test_transformer_layer_harness(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], bool)[:, None, None, :]
    run_layer_test(
        BertTransformerLayer,
        dict(num_heads=2, intermediate_dim=16),
        (x,),
        (2, 5, 8),
        call_kwargs={"attention_mask": mask},
        tmp_path=tmp_path,
    )


def test_padding_masks_reach_fused_attention_with_the_query_length():
    """cuDNN's fused attention (JAX on a GPU) takes no mask of query length 1."""
    import keras

    from kbert.layers.transformer import _with_query_length

    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], bool)[:, None, None, :]
    query = np.zeros((2, 5, 2, 4), "float32")
    widened = keras.ops.convert_to_numpy(
        _with_query_length(keras.ops.convert_to_tensor(mask), query)
    )
    if keras.backend.backend() == "jax":
        assert widened.shape == (2, 1, 5, 5)
        assert (widened == mask).all()  # every query row is the key mask
    else:
        assert widened.shape == mask.shape
    assert _with_query_length(None, query) is None
    # Padded and unpadded inputs give the same outputs at the real tokens.
    layer = BertTransformerLayer(num_heads=2, intermediate_dim=16)
    x = np.random.default_rng(0).normal(size=(1, 5, 8)).astype("float32")
    padded = layer(x, attention_mask=mask[:1])
    cut = layer(x[:, :2], attention_mask=mask[:1, :, :, :2])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(padded)[:, :2],
        keras.ops.convert_to_numpy(cut),
        atol=1e-5,
    )
