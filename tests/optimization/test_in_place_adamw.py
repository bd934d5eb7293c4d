"""InPlaceAdamW computes what `keras.optimizers.AdamW` computes."""

import keras
import numpy as np
import pytest

from kbert.optimization.in_place_adamw import InPlaceAdamW
from kbert.optimization.optimizers import bert_optimizer


def _run(optimizer, steps=6):
    rng = np.random.default_rng(0)
    shapes = {"kernel": (7, 5), "bias": (5,), "embeddings": (11, 5)}
    variables = [
        keras.Variable(rng.normal(size=shape).astype("float32"), name=name)
        for name, shape in shapes.items()
    ]
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    for _ in range(steps):
        grads = [
            keras.ops.convert_to_tensor(rng.normal(size=v.shape).astype("float32"))
            for v in variables
        ]
        optimizer.apply(grads, variables)
    return [keras.ops.convert_to_numpy(v) for v in variables]


@pytest.mark.parametrize(
    "arguments",
    [
        {"global_clipnorm": 1.0},  # clipping active: the gradients' norm is ~8
        {"global_clipnorm": 100.0, "amsgrad": True},
        {"clipnorm": 0.5},
        {},
    ],
)
def test_same_variables_as_keras_adamw(arguments):
    common = dict(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, **arguments)
    want = _run(keras.optimizers.AdamW(**common))
    got = _run(InPlaceAdamW(**common))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert any(np.abs(a).max() > 0 for a in got)


def test_bert_optimizer_is_in_place_and_round_trips():
    optimizer = bert_optimizer(total_steps=10, warmup_steps=2)
    assert isinstance(optimizer, InPlaceAdamW)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is InPlaceAdamW
    assert restored.global_clipnorm == optimizer.global_clipnorm
