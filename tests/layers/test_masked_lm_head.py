"""MaskedLMHead through the layer harness: its decoder is the embedding it is given."""

import keras
import numpy as np

from kbert.layers.masked_lm_head import MaskedLMHead
from tests.test_case import run_layer_test


def token_embedding(dtype=None):
    embedding = keras.layers.Embedding(30, 8, dtype=dtype)
    embedding.build((None,))
    return embedding


def test_masked_lm_head_harness(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[1, 3], [0, 4]], "int32")
    run_layer_test(
        MaskedLMHead,
        dict(activation="gelu"),
        (x, positions),
        (2, 2, 30),
        non_config_kwargs=lambda dtype: {"token_embedding": token_embedding(dtype)},
        float32_outputs=True,
        tmp_path=tmp_path,
    )


def test_decoder_is_tied_to_the_embedding():
    embedding = token_embedding()
    head = MaskedLMHead(embedding)
    x = np.ones((1, 2, 8), "float32")
    before = keras.ops.convert_to_numpy(head(x))
    embedding.embeddings.assign(embedding.embeddings * 2.0)
    assert not np.allclose(keras.ops.convert_to_numpy(head(x)), before)
    # The embedding is the only (vocabulary, hidden) matrix: no decoder of its own.
    assert [tuple(v.shape) for v in head.weights].count((30, 8)) == 1
