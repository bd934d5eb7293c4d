"""BertEmbeddings through the layer harness, and its sum of three embeddings."""

import keras
import numpy as np

from kbert.layers.embeddings import BertEmbeddings
from tests.test_case import run_layer_test

INIT = dict(vocabulary_size=20, hidden_dim=8, max_sequence_length=12, num_segments=2)
TOKENS = np.array([[2, 5, 7, 3, 0], [2, 9, 3, 0, 0]], "int32")
SEGMENTS = np.array([[0, 0, 0, 1, 0], [0, 0, 1, 0, 0]], "int32")


def test_embeddings_harness(tmp_path):
    run_layer_test(BertEmbeddings, INIT, (TOKENS, SEGMENTS), (2, 5, 8), tmp_path=tmp_path)


def test_embeddings_sum_token_position_and_segment_before_layer_norm():
    layer = BertEmbeddings(**INIT, dropout=0.0)
    out = keras.ops.convert_to_numpy(layer(TOKENS, SEGMENTS))
    weights = {
        name: keras.ops.convert_to_numpy(getattr(layer, name).embeddings)
        for name in ("token_embedding", "position_embedding", "segment_embedding")
    }
    summed = (
        weights["token_embedding"][TOKENS]
        + weights["position_embedding"][None, : TOKENS.shape[1]]
        + weights["segment_embedding"][SEGMENTS]
    )
    mean, var = summed.mean(-1, keepdims=True), summed.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (summed - mean) / np.sqrt(var + 1e-12), atol=1e-5)
