"""The first `fit` / `evaluate` of a model traces its step once per batch
shape (kbert.models.prebuilt_state): on TensorFlow the optimizer's and
metrics' variables used to be made inside the first trace, and a
`tf.function` that makes variables is traced again."""

import keras
import numpy as np

import kbert
from tests.test_case import tiny_backbone, token_inputs

STEPS, EPOCHS = 3, 2


def _counted(model, name):
    """Counts the Python runs of `model.<name>` (once per trace when compiled)."""
    runs = []
    step = getattr(model, name)

    def counting(*args, **kwargs):
        runs.append(1)
        return step(*args, **kwargs)

    setattr(model, name, counting)
    return runs


def _expected_runs(steps):
    # PyTorch runs small models eagerly: the step's Python runs every step.
    return steps if keras.backend.backend() == "torch" else 1


def test_the_first_fit_and_evaluate_trace_their_step_once():
    model = kbert.BertClassifier(tiny_backbone(vocabulary_size=64), num_classes=2)
    x = token_inputs(batch=4 * STEPS, length=10)
    y = np.arange(4 * STEPS) % 2
    train_runs = _counted(model, "train_step")
    test_runs = _counted(model, "test_step")
    model.fit(x, y, batch_size=4, epochs=EPOCHS, verbose=0)
    assert len(train_runs) == _expected_runs(STEPS * EPOCHS)
    assert model.optimizer.iterations.numpy() == STEPS * EPOCHS

    fresh = kbert.BertClassifier(tiny_backbone(vocabulary_size=64), num_classes=2)
    test_runs = _counted(fresh, "test_step")
    loss, accuracy = fresh.evaluate(x, y, batch_size=4, verbose=0)
    assert len(test_runs) == _expected_runs(STEPS)
    logits = fresh.predict(x, batch_size=4, verbose=0)
    assert accuracy == np.float32(np.mean(np.argmax(logits, -1) == y))
    assert np.isclose(
        loss,
        np.mean(
            keras.ops.convert_to_numpy(
                keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            )
        ),
        rtol=1e-5,
    )
