"""TokenAccuracy: sparse categorical accuracy that skips ignored labels."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class TokenAccuracy(keras.metrics.SparseCategoricalAccuracy):
    """Accuracy over the tokens whose label is not `ignore_class`.

    Token classification labels only the first piece of each word; the
    other pieces, special tokens and padding carry -100, which the default
    loss ignores and plain `SparseCategoricalAccuracy` would count as wrong.

    Example:
    >>> metric = TokenAccuracy()
    >>> metric.update_state([[1, -100, 0]], [[[0.1, 0.9], [0.9, 0.1], [0.2, 0.8]]])
    >>> float(metric.result())
    0.5
    """

    def __init__(self, ignore_class=-100, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_class = ignore_class

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        keep = ops.cast(ops.not_equal(y_true, self.ignore_class), "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(ops.convert_to_tensor(sample_weight), "float32")
            while len(sample_weight.shape) < len(keep.shape):
                sample_weight = ops.expand_dims(sample_weight, -1)
            keep = keep * sample_weight
        y_true = ops.where(keep > 0, y_true, ops.zeros_like(y_true))
        return super().update_state(y_true, y_pred, sample_weight=keep)

    def get_config(self):
        return {**super().get_config(), "ignore_class": self.ignore_class}
