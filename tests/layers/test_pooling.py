"""SentencePooling through the layer harness, and its three modes on known values."""

import keras
import numpy as np
import pytest

from kbert.layers.pooling import SentencePooling
from tests.test_case import run_layer_test

X = np.array([[[1.0, 2.0], [3.0, -4.0], [100.0, 100.0]]], "float32")
MASK = np.array([[1, 1, 0]], "int32")


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_harness(pooling, tmp_path):
    run_layer_test(
        SentencePooling,
        dict(pooling=pooling),
        (X, MASK),
        (1, 2),
        float32_outputs=True,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    "pooling, expected", [("mean", [2.0, -1.0]), ("cls", [1.0, 2.0]), ("max", [3.0, 2.0])]
)
def test_pooling_ignores_padding(pooling, expected):
    pooled = SentencePooling(pooling, normalize=False)(X, MASK)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(pooled), [expected])
    normalized = keras.ops.convert_to_numpy(SentencePooling(pooling)(X, MASK))
    np.testing.assert_allclose(np.linalg.norm(normalized, axis=-1), [1.0], rtol=1e-6)
