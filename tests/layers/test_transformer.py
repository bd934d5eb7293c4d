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
