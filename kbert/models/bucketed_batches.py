"""In-memory samples as length-bucketed batches for `fit` and `evaluate`.

`BucketedBatches` is a `keras.utils.PyDataset`: JAX and torch read it
straight from Python, with no TensorFlow thread pools competing with the
training step for the CPU. Keras' TensorFlow adapter would fix each batch's
shape from the first two batches, so on the TensorFlow backend
`as_tf_dataset()` gives the same batches through `tf.data` with the
sequence length left dynamic.
"""

import keras
import numpy as np

from kbert.models import length_batching
from kbert.models.backbone import INPUT_NAMES


class BucketedBatches(keras.utils.PyDataset):
    """Batches of `(features, y, sample_weight)`, each cut to its bucket length.

    Args:
        features: dict of NumPy arrays padded to `sequence_length` on their
            last axis (`padding_mask` among them).
        y, sample_weight: arrays (or structures of arrays) with one row per
            sample, or None.
        batch_size: samples per batch.
        sequence_length: the padded length of `features`.
        shuffle: a new random grouping each epoch (Hugging Face's
            `group_by_length`); otherwise the given order, sorted by length
            within mega-batches.
        coarse: use the coarse bucket lengths (training under XLA).
        label_axis: the sequence axis of labels and sample weights that have
            one (token labels), cut with their batch; None when there is none.
        sequence_names: the feature names to cut.

    Example:
    >>> mask = (np.arange(16) < np.array([[3], [12], [2], [5]])).astype("int32")
    >>> batches = BucketedBatches({"padding_mask": mask}, np.arange(4), None, 2, 16,
    ...                           shuffle=False, sequence_names=("padding_mask",))
    >>> [(x["padding_mask"].shape, y.tolist()) for x, y in (batches[0], batches[1])]
    [((2, 16), [1, 0]), ((2, 8), [2, 3])]
    """

    def __init__(
        self,
        features,
        y,
        sample_weight,
        batch_size,
        sequence_length,
        shuffle,
        coarse=False,
        label_axis=None,
        sequence_names=INPUT_NAMES,
    ):
        super().__init__()
        self.features, self.y, self.sample_weight = features, y, sample_weight
        self.batch_size = batch_size
        self.sequence_length = sequence_length
        self.coarse = coarse
        self.label_axis = label_axis
        self.sequence_names = set(sequence_names)
        self.lengths = length_batching.token_lengths(features)
        # Seeded from NumPy's global generator (`keras.utils.set_random_seed`).
        self.seed = int(np.random.randint(2**31 - 1)) if shuffle else None
        self.epoch = 0
        self.batches = self._group(self.epoch)

    def _group(self, epoch):
        rng = None if self.seed is None else np.random.RandomState(self.seed + epoch)
        return length_batching.training_batches(
            self.lengths, self.batch_size, self.sequence_length, rng, self.coarse
        )

    def _cut_labels(self, value, length):
        if value is None or self.label_axis is None:
            return value
        axis = self.label_axis

        def cut(array):
            array = np.asarray(array)
            return array if array.ndim <= axis else np.take(array, range(length), axis=axis)

        return keras.tree.map_structure(cut, value)

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows = self.batches[index]
        longest = int(self.lengths[rows].max())
        length = length_batching.bucket_length(longest, self.sequence_length, self.coarse)
        x = length_batching.trim(
            length_batching.take_rows(self.features, rows), length, self.sequence_names
        )
        y, sample_weight = (
            self._cut_labels(length_batching.take_rows(value, rows), length)
            for value in (self.y, self.sample_weight)
        )
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def on_epoch_end(self):
        self.epoch += 1
        self.batches = self._group(self.epoch)

    def as_tf_dataset(self):
        """The same batches as a `tf.data.Dataset` with dynamic sequence length."""
        import tensorflow as tf  # lazy: the TensorFlow backend only

        def generate():
            for index in range(len(self)):
                yield self[index]
            self.on_epoch_end()

        def spec(value):
            value = np.asarray(value)
            return tf.TensorSpec((None,) * value.ndim, tf.as_dtype(value.dtype))

        signature = keras.tree.map_structure(spec, self[0])
        if isinstance(signature, list):
            signature = tuple(signature)
        dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(len(self)))
        return dataset.prefetch(2)
