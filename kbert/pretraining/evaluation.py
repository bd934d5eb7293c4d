"""Pretraining evaluation: the majority-token baseline for masked-LM accuracy."""

import collections

import numpy as np

from kbert.pretraining.dataset import read_metadata, record_files
from kbert.pretraining.tfrecords import feature_spec


def masked_token_counts(
    source, ignore_ids=(), max_seq_length=None, max_predictions_per_seq=None
):
    """`collections.Counter` of the original ids at masked positions.

    For unmasked (dynamic) data, counts every real token not in `ignore_ids`
    instead: masks are drawn uniformly, so the frequencies are the same in
    expectation.

    Example:
    >>> token_id, count = masked_token_counts(pretraining_data).most_common(1)[0]
    >>> vocabulary[token_id], count
    ('.', 15)
    """
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    metadata = read_metadata(source) or {}
    max_seq_length = max_seq_length or metadata["max_seq_length"]
    dynamic = metadata.get("masking") == "dynamic"
    max_predictions_per_seq = max_predictions_per_seq or metadata.get(
        "max_predictions_per_seq"
    )
    spec = feature_spec(max_seq_length, None if dynamic else max_predictions_per_seq)
    counts = collections.Counter()
    dataset = tf.data.TFRecordDataset(record_files(source)).batch(1024)
    for batch in dataset.map(lambda serialized: tf.io.parse_example(serialized, spec)):
        if dynamic:
            values = batch["input_ids"].numpy()[batch["input_mask"].numpy() > 0]
            values = values[~np.isin(values, list(ignore_ids))]
        else:
            values = batch["masked_lm_ids"].numpy()[batch["masked_lm_weights"].numpy() > 0]
        ids, numbers = np.unique(values, return_counts=True)
        counts.update(dict(zip(ids.tolist(), numbers.tolist())))
    return counts


def majority_baseline(train_source, eval_source, special_ids=()):
    """Accuracy on `eval_source` of always predicting the most frequent
    masked token of `train_source`; returns `(token_id, accuracy)`.

    Example:
    >>> token_id, accuracy = majority_baseline(pretraining_data, pretraining_data)
    >>> vocabulary[token_id], round(accuracy, 3)
    ('.', 0.214)
    """
    train = masked_token_counts(train_source, ignore_ids=special_ids)
    token_id = train.most_common(1)[0][0]
    held_out = masked_token_counts(eval_source, ignore_ids=special_ids)
    return int(token_id), held_out[token_id] / max(1, sum(held_out.values()))
