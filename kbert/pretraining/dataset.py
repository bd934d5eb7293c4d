"""Pretraining TFRecords -> `tf.data` batches of `(x, y, sample_weight)`.

x = {token_ids, segment_ids, padding_mask, mask_positions} (int32),
y = {"mlm_logits": masked ids, "nsp_logits": next-sentence label},
sample_weight = {"mlm_logits": masked_lm_weights, "nsp_logits": ones},
what `kbert.BertPretrainer.fit` takes on every backend.

Training datasets repeat forever with a fresh, seeded order every epoch
(`steps_per_epoch` tells `fit` where epochs end), and can start at any
`start_step`: the same seed and step give the same batches, which is what an
exact resume needs. With dynamic masking the masks of batch `k` are drawn
with the stateless seed `(seed, k)`.
"""

import glob
import json
import os

from kbert.pretraining.data_creation import METADATA_FILE, VOCABULARY_FILE
from kbert.pretraining.masking import MaskedLMMasker
from kbert.pretraining.tfrecords import feature_spec


def read_metadata(source):
    """`metadata.json` of a directory made by `create_pretraining_data`, or None.

    Example:
    >>> read_metadata(pretraining_data)["max_seq_length"]
    16
    """
    path = os.path.join(os.fspath(source), METADATA_FILE)
    if os.path.isdir(os.fspath(source)) and os.path.exists(path):
        with open(path) as file:
            return json.load(file)
    return None


def record_files(source):
    """Sorted TFRecord files of a data directory, glob pattern or list of either.

    Example:
    >>> [os.path.basename(path) for path in record_files(pretraining_data)]
    ['data-00000-of-00001.tfrecord']
    """
    if isinstance(source, str | os.PathLike):
        source = [os.fspath(source)]
    files = []
    for item in source:
        item = os.fspath(item)
        metadata = read_metadata(item)
        if metadata is not None:
            files += [os.path.join(item, name) for name in metadata["files"]]
        elif os.path.isdir(item):
            files += glob.glob(os.path.join(item, "*.tfrecord"))
        else:
            files += glob.glob(item) or [item]
    if not files:
        raise FileNotFoundError(f"No TFRecord files found in {source!r}.")
    return sorted(files)


def count_records(source):
    """Number of pretraining examples (from metadata, else by counting).

    Example:
    >>> files = os.path.join(pretraining_data, "*.tfrecord")  # counted, no metadata
    >>> count_records(files) == read_metadata(pretraining_data)["num_instances"]
    True
    """
    metadata = read_metadata(source) if isinstance(source, str | os.PathLike) else None
    if metadata is not None:
        return metadata["num_instances"]
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    return int(tf.data.TFRecordDataset(record_files(source)).reduce(0, lambda n, _: n + 1))


def pretraining_dataset(
    source,
    batch_size,
    max_seq_length=None,
    max_predictions_per_seq=None,
    masker=None,
    training=True,
    seed=0,
    start_step=0,
    shuffle_buffer_size=10000,
    num_shards=1,
    shard_index=0,
):
    """A `tf.data.Dataset` of `(x, y, sample_weight)` pretraining batches.

    Args:
        source: a directory from `create_pretraining_data` (sizes, masking
            mode and vocabulary come from its metadata), or TFRecord files or
            a glob, e.g. written by the original `create_pretraining_data.py`;
            then give `max_seq_length` and `max_predictions_per_seq`.
        masker: a `MaskedLMMasker` for unmasked (dynamic) data; built from
            the directory's vocabulary and metadata when left out.
        training: True repeats forever, shuffled per epoch, full batches only;
            False reads once in order (evaluation), keeping the last batch.
        start_step: batches to skip (training), e.g. the restored
            `optimizer.iterations` when resuming.
        num_shards, shard_index: read only shard `shard_index` of
            `num_shards` (one per process of a multi-process job): records
            are dealt out in turn, so in every epoch each record goes to
            exactly one shard, and each shard's batches hold
            `batch_size // num_shards` records (`batch_size` stays the
            global batch). Dynamic masks are drawn per shard and step.

    Example:
    >>> ds = pretraining_dataset(pretraining_data, batch_size=2)
    >>> x, y, sample_weight = next(iter(ds))
    >>> sorted(x), tuple(x["token_ids"].shape)
    (['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], (2, 16))
    """
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    metadata = read_metadata(source) if isinstance(source, str | os.PathLike) else None
    if metadata is not None:
        max_seq_length = max_seq_length or metadata["max_seq_length"]
        max_predictions_per_seq = (
            max_predictions_per_seq or metadata["max_predictions_per_seq"]
        )
        dynamic = metadata["masking"] == "dynamic"
        if dynamic and masker is None:
            masker = MaskedLMMasker(
                os.path.join(os.fspath(source), VOCABULARY_FILE),
                masked_lm_prob=metadata["masked_lm_prob"],
                max_predictions_per_seq=max_predictions_per_seq,
                whole_word_masking=metadata["whole_word_masking"],
            )
    else:
        dynamic = masker is not None
    if max_seq_length is None or (max_predictions_per_seq is None and not dynamic):
        raise ValueError(
            "Pass max_seq_length and max_predictions_per_seq (the values the "
            "data was created with) for TFRecords without kbert metadata."
        )
    if dynamic:
        max_predictions_per_seq = masker.max_predictions_per_seq
    if not 0 <= shard_index < num_shards:
        raise ValueError(f"shard_index={shard_index} is outside 0..{num_shards - 1}.")
    if batch_size % num_shards:
        raise ValueError(
            f"batch_size={batch_size} does not split over {num_shards} shards "
            f"(processes); use a multiple of {num_shards}."
        )
    local_batch_size = batch_size // num_shards
    files = record_files(source)
    spec = feature_spec(max_seq_length, None if dynamic else max_predictions_per_seq)

    def parse(step, serialized):
        features = tf.io.parse_example(serialized, spec)
        features = {
            k: tf.cast(v, tf.float32 if k == "masked_lm_weights" else tf.int32)
            for k, v in features.items()
        }
        if dynamic:
            masked = masker(
                features["input_ids"],
                features["input_mask"],
                tf.stack([tf.constant(seed, tf.int64), step * num_shards + shard_index]),
            )
            features["input_ids"] = masked["token_ids"]
            features["masked_lm_positions"] = masked["mask_positions"]
            features["masked_lm_ids"] = masked["mask_ids"]
            features["masked_lm_weights"] = masked["mask_weights"]
        return to_model_inputs(features)

    if training:
        # Each epoch's order comes from (seed, epoch) alone, not from how
        # often the dataset was iterated: every process of a job, and every
        # run, sees the same order in the same epoch.
        # (A stateless shuffle: `Dataset.shuffle` refuses a tensor seed once
        # a global seed is set, as `keras.utils.set_random_seed` does.)
        def epoch_records(epoch):
            epoch_seed = tf.stack([tf.constant(seed, tf.int64), epoch])
            order = tf.data.Dataset.from_tensor_slices(
                tf.random.experimental.stateless_shuffle(tf.constant(files), epoch_seed)
            )
            records = order.interleave(
                tf.data.TFRecordDataset,
                cycle_length=min(len(files), 4),
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True,
            )
            if num_shards > 1:
                # Every process reads the same order and keeps its own turns.
                records = records.shard(num_shards, shard_index)
            # One seed for every epoch: the file order above differs per epoch.
            return records.shuffle(
                shuffle_buffer_size, seed=seed + 1, reshuffle_each_iteration=False
            )

        records = tf.data.Dataset.counter().flat_map(epoch_records)
        dataset = records.batch(local_batch_size, drop_remainder=True).enumerate()
        dataset = dataset.skip(start_step)
    else:
        records = tf.data.TFRecordDataset(files)
        if num_shards > 1:
            records = records.shard(num_shards, shard_index)
        dataset = records.batch(local_batch_size).enumerate()
        if metadata is not None and num_shards == 1:
            # A known size lets Keras show progress and not warn at the end.
            num_batches = -(-metadata["num_instances"] // batch_size)
            dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
    return dataset.map(
        parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    ).prefetch(tf.data.AUTOTUNE)


def to_model_inputs(features):
    """Original feature names -> `(x, y, sample_weight)` for `BertPretrainer`.

    Example:
    >>> import tensorflow as tf
    >>> from kbert.pretraining.tfrecords import feature_spec
    >>> files = record_files(pretraining_data)
    >>> records = next(iter(tf.data.TFRecordDataset(files).batch(2)))
    >>> features = tf.io.parse_example(records, feature_spec(16, 3))
    >>> x, y, sample_weight = to_model_inputs(features)
    >>> sorted(y), sorted(sample_weight)
    (['mlm_logits', 'nsp_logits'], ['mlm_logits', 'nsp_logits'])
    """
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    labels = tf.reshape(features["next_sentence_labels"], [-1])
    x = {
        "token_ids": features["input_ids"],
        "segment_ids": features["segment_ids"],
        "padding_mask": features["input_mask"],
        "mask_positions": features["masked_lm_positions"],
    }
    y = {"mlm_logits": features["masked_lm_ids"], "nsp_logits": labels}
    sample_weight = {
        "mlm_logits": features["masked_lm_weights"],
        "nsp_logits": tf.ones_like(labels, tf.float32),
    }
    return x, y, sample_weight
