"""Diverged training stops: a non-finite loss raises, naming the epoch and step.

Keras' `TerminateOnNaN` stops training without an error: the caller gets a
model whose weights are NaN and a history that looks finished. `Task.fit`
adds `StopOnNonFiniteLoss` to its callbacks instead (unless given
`stop_on_nan=False`, or a callback list that already holds one, or Keras'
`TerminateOnNaN` as the user's choice).
"""

import keras
import numpy as np


class TrainingDivergedError(FloatingPointError):
    """The loss or the weights stopped being finite."""


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Raises `TrainingDivergedError` as soon as the batch loss is NaN or
    infinite, naming the epoch and the step (counted from 1).

    Example:
    >>> callback = StopOnNonFiniteLoss("BertClassifier")
    >>> callback.on_epoch_begin(0)
    >>> try:
    ...     callback.on_train_batch_end(2, {"loss": float("nan")})
    ... except TrainingDivergedError as error:
    ...     print(str(error).split(";")[0])
    BertClassifier: the training loss became nan at epoch 1, step 3
    """

    def __init__(self, model_name="the model"):
        super().__init__()
        self.model_name = model_name
        self.epoch = 1

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch + 1

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(np.asarray(keras.ops.convert_to_numpy(loss)))
        if not np.isfinite(loss):
            raise TrainingDivergedError(
                f"{self.model_name}: the training loss became {loss} at epoch "
                f"{self.epoch}, step {batch + 1}; stopping (the weights may hold "
                "NaN: do not save them)."
            )


def with_divergence_guard(callbacks, model_name, stop_on_nan=True):
    """`callbacks` (a list, or None) with a `StopOnNonFiniteLoss` first,
    unless `stop_on_nan` is False or the list has a NaN guard already.

    Example:
    >>> [type(c).__name__ for c in with_divergence_guard(None, "BertClassifier")]
    ['StopOnNonFiniteLoss']
    >>> len(with_divergence_guard([keras.callbacks.TerminateOnNaN()], "m"))
    1
    """
    if isinstance(callbacks, keras.callbacks.CallbackList):
        return callbacks  # built by the caller: taken as it is
    callbacks = list(callbacks or [])
    guards = (StopOnNonFiniteLoss, keras.callbacks.TerminateOnNaN)
    if not stop_on_nan or any(isinstance(c, guards) for c in callbacks):
        return callbacks
    return [StopOnNonFiniteLoss(model_name), *callbacks]
