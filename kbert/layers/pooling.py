"""Sentence pooling over token vectors, aware of the padding mask."""

import keras
from keras import ops

POOLING_MODES = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="kbert")
class SentencePooling(keras.layers.Layer):
    """Pools (batch, seq, hidden) token vectors into (batch, hidden).

    `mean` averages real tokens only (padding excluded, as
    sentence-transformers does), `cls` takes the first token, `max` takes the
    maximum over real tokens. `normalize=True` L2-normalizes the result.

    Example:
    >>> pool = SentencePooling("mean", normalize=False)
    >>> x = np.array([[[1.0], [3.0], [100.0]]]); mask = np.array([[1, 1, 0]])
    >>> keras.ops.convert_to_numpy(pool(x, mask))
    array([[2.]], dtype=float32)
    """

    def __init__(self, pooling="mean", normalize=True, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}; got {pooling!r}.")
        self.pooling = pooling
        self.normalize = normalize

    def call(self, sequence_output, padding_mask):
        x = ops.cast(sequence_output, "float32")
        mask = ops.cast(padding_mask, "float32")[..., None]
        if self.pooling == "cls":
            pooled = x[:, 0, :]
        elif self.pooling == "mean":
            pooled = ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        else:
            pooled = ops.max(ops.where(mask > 0, x, -1e9), axis=1)
        if self.normalize:
            # sentence-transformers' Normalize: x / max(||x||, 1e-12).
            norm = ops.sqrt(ops.sum(pooled * pooled, axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
