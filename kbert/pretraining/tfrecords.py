"""Pretraining TFRecords in the original BERT format.

Feature names and shapes are those `create_pretraining_data.py` writes and
`run_pretraining.py` reads, so data made by either tool loads in the other:
`input_ids`, `input_mask`, `segment_ids` (max_seq_length int64 each),
`masked_lm_positions`, `masked_lm_ids` (max_predictions_per_seq int64),
`masked_lm_weights` (max_predictions_per_seq float) and
`next_sentence_labels` (1 int64; 1 = B is a random segment). Data for dynamic
masking has the first three and `next_sentence_labels` only.
"""

import numpy as np

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


def feature_spec(max_seq_length, max_predictions_per_seq=None):
    """The `tf.io.parse_example` spec; no masked-LM features when P is None.

    Example:
    >>> sorted(feature_spec(128, 20))[:3]
    ['input_ids', 'input_mask', 'masked_lm_ids']
    """
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    spec = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
        for name in SEQUENCE_FEATURES
    }
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    if max_predictions_per_seq is not None:
        for name in MASKED_LM_FEATURES:
            dtype = tf.float32 if name == "masked_lm_weights" else tf.int64
            spec[name] = tf.io.FixedLenFeature([max_predictions_per_seq], dtype)
    return spec


def serialize_example(features):
    """One `tf.train.Example` from a dict of 1-D arrays, serialized to bytes.

    Example:
    >>> data = serialize_example({"input_ids": [2, 7, 3], "masked_lm_weights": [1.0]})
    >>> isinstance(data, bytes)
    True
    """
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    feature = {}
    for name, values in features.items():
        values = np.asarray(values).reshape(-1)
        if values.dtype.kind == "f":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    # Map entries in key order: the same bytes in every process (hash seeds differ).
    return example.SerializeToString(deterministic=True)


class ShardedRecordWriter:
    """Writes serialized records round-robin into `num_shards` TFRecord files.

    Files are named `{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord`; records
    stream straight to disk. Use as a context manager.

    Example:
    >>> with ShardedRecordWriter("data", num_shards=2) as writer:
    ...     writer.write(serialize_example({"input_ids": [2, 3]}))
    >>> writer.num_records, writer.paths
    (1, ['data-00000-of-00002.tfrecord', 'data-00001-of-00002.tfrecord'])
    """

    def __init__(self, prefix, num_shards=1):
        self.paths = [
            f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)
        ]
        self.num_records = 0
        self._writers = None

    def __enter__(self):
        import tensorflow as tf  # lazy: TF only when pretraining data is created or read

        self._writers = [tf.io.TFRecordWriter(path) for path in self.paths]
        return self

    def write(self, record):
        self._writers[self.num_records % len(self._writers)].write(record)
        self.num_records += 1

    def __exit__(self, *exc_info):
        for writer in self._writers:
            writer.close()
