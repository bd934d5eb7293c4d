"""`bert_optimizer(mixed_float16=True)`: loss scaling trains a float16 model
as float32 does, and skips steps whose scaled gradients overflow."""

import keras
import numpy as np

import kbert
from kbert.optimization.optimizers import bert_optimizer
from tests.test_case import randomized, tiny_backbone, token_inputs

LABELS = np.array([0, 1, 1, 0, 1, 0])


def _trained(policy, steps=6, overflow_first=False):
    keras.utils.set_random_seed(7)
    model = kbert.BertClassifier(tiny_backbone(dtype=policy), 2, dropout=0.0)
    randomized(model, seed=3, scale=0.1)
    optimizer = bert_optimizer(
        learning_rate=3e-3, weight_decay=0.0, mixed_float16=policy == "mixed_float16"
    )
    model.compile(optimizer=optimizer)
    inputs = token_inputs(batch=6, seed=1)
    before = [np.array(w) for w in model.get_weights()]
    if overflow_first:
        optimizer.build(model.trainable_variables)
        optimizer.dynamic_scale.assign(2.0**60)  # float16 gradients overflow
        model.fit(inputs, LABELS, batch_size=6, epochs=1, verbose=0)
        return model, optimizer, before
    history = model.fit(inputs, LABELS, batch_size=6, epochs=steps, verbose=0)
    return model, optimizer, history.history["loss"]


def test_loss_scaled_float16_training_follows_float32():
    _, optimizer, mixed = _trained("mixed_float16")
    _, _, full = _trained("float32")
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert mixed[-1] < 0.9 * mixed[0]  # it learns
    np.testing.assert_allclose(mixed, full, rtol=0.05)


def test_an_overflowing_step_is_skipped_and_the_scale_lowered():
    model, optimizer, before = _trained("mixed_float16", overflow_first=True)
    for value, previous in zip(model.get_weights(), before):
        np.testing.assert_array_equal(value, previous)
    assert float(optimizer.dynamic_scale) == 2.0**59
