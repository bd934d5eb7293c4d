"""Data creation: documents, sentence pairs, NSP labels, TFRecords, streaming.

Everything here is pure Python or tf.data, the same code on every Keras
backend: it runs once, on the tensorflow pass.
"""

import json
import os
import random
import tracemalloc

import numpy as np
import pytest

from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import count_records, pretraining_dataset
from kbert.pretraining.documents import (
    documents_from_texts,
    read_documents,
    split_sentences,
)
from kbert.pretraining.instances import create_pair_instances, truncate_pair
from tests.pretraining.pretraining_helpers import (
    ToyTokenizer,
    iter_synthetic_documents,
    only_on_tensorflow_run,
    synthetic_documents,
    toy_vocabulary,
)

pytestmark = only_on_tensorflow_run()
CLS, SEP = 2, 3


def tokenized_documents(num_documents, seed=0):
    tokenizer = ToyTokenizer()
    return [tokenizer(document) for document in synthetic_documents(num_documents, seed)]


def test_split_sentences_and_read_documents(tmp_path):
    text = "Dr. Smith met Mr. Jones in 1990. They talked! Did it work? Yes.\nNew paragraph"
    assert split_sentences(text) == [
        "Dr. Smith met Mr. Jones in 1990.",
        "They talked!",
        "Did it work?",
        "Yes.",
        "New paragraph",
    ]
    path = tmp_path / "corpus.txt"
    path.write_text("a b.\nc d.\n\n\ne f.\n\ng h.\n")
    assert list(read_documents([str(path)])) == [["a b.", "c d."], ["e f."], ["g h."]]
    assert list(documents_from_texts(["One. Two.", "", "Three."])) == [
        ["One.", "Two."],
        ["Three."],
    ]


def test_truncate_pair_trims_the_longer_segment_from_both_ends():
    rng = random.Random(0)
    a, b = list(range(10)), list(range(100, 103))
    truncate_pair(a, b, 8, rng)
    assert len(a) + len(b) == 8 and b == [100, 101, 102]
    # Tokens left are a contiguous run of the original, cut at both ends over trials.
    assert a == list(range(a[0], a[0] + 5))
    starts = set()
    for seed in range(20):
        a = list(range(10))
        truncate_pair(a, [], 5, random.Random(seed))
        starts.add(a[0])
    assert len(starts) > 1


def test_pair_instances_have_bert_layout():
    documents = tokenized_documents(60)
    rng = random.Random(1)
    max_seq_length = 24
    count = 0
    for index, document in enumerate(documents):
        others = documents[:index] + documents[index + 1 :]
        for instance in create_pair_instances(
            document,
            others,
            rng,
            CLS,
            SEP,
            max_seq_length=max_seq_length,
            short_seq_prob=0.2,
        ):
            ids, segments = instance.token_ids, instance.segment_ids
            assert len(ids) == len(segments) <= max_seq_length
            assert ids[0] == CLS and ids[-1] == SEP and ids.count(SEP) == 2
            boundary = ids.index(SEP)
            assert boundary >= 2 and len(ids) - boundary >= 3  # both segments non-empty
            assert segments == [0] * (boundary + 1) + [1] * (len(ids) - boundary - 1)
            count += 1
    assert count > 100


def test_actual_next_pairs_are_contiguous_text():
    # One document of distinct consecutive ids: an actual-next B continues A.
    document = [list(range(10 + 5 * s, 15 + 5 * s)) for s in range(8)]
    other = [[[900, 901, 902, 903]] * 3]
    rng = random.Random(0)
    seen = {True: 0, False: 0}
    for _ in range(50):
        for instance in create_pair_instances(
            document, other, rng, CLS, SEP, max_seq_length=64, short_seq_prob=0.0
        ):
            ids = instance.token_ids
            boundary = ids.index(SEP)
            a, b = ids[1:boundary], ids[boundary + 1 : -1]
            seen[instance.is_random_next] += 1
            if instance.is_random_next:
                assert set(b) <= {900, 901, 902, 903}
            else:
                assert b[0] == a[-1] + 1  # no truncation needed at this length
    assert seen[True] > 5 and seen[False] > 5


def test_next_sentence_labels_are_half_random():
    # >= 30,000 pairs: the standard error of the share is under 0.3 points.
    documents = tokenized_documents(2400, seed=3)
    rng = random.Random(7)
    labels = []
    for _ in range(3):
        for index, document in enumerate(documents):
            others = documents[:index] + documents[index + 1 :]
            labels += [
                instance.is_random_next
                for instance in create_pair_instances(
                    document, others, rng, CLS, SEP, max_seq_length=16
                )
            ]
    assert len(labels) >= 30000
    share = float(np.mean(labels))
    assert abs(share - 0.5) <= 0.01, share


@pytest.fixture(scope="module")
def static_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("static") / "data"
    metadata = create_pretraining_data(
        synthetic_documents(120),
        out,
        ToyTokenizer(),
        max_seq_length=32,
        max_predictions_per_seq=6,
        dupe_factor=2,
        num_shards=2,
        seed=5,
        progress=False,
    )
    return out, metadata


def test_static_records_use_the_original_feature_names_and_shapes(static_data):
    import tensorflow as tf

    out, metadata = static_data
    assert metadata["num_instances"] == count_records(out) > 0
    files = sorted(str(p) for p in out.glob("*.tfrecord"))
    assert len(files) == 2
    # The spec `run_pretraining.py` of the original BERT parses with.
    original_spec = {
        "input_ids": tf.io.FixedLenFeature([32], tf.int64),
        "input_mask": tf.io.FixedLenFeature([32], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([32], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([6], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([6], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([6], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    record = next(iter(tf.data.TFRecordDataset(files)))
    example = tf.train.Example.FromString(record.numpy())
    assert set(example.features.feature) == set(original_spec)
    parsed = tf.io.parse_single_example(record, original_spec)
    mask = parsed["input_mask"].numpy()
    ids = parsed["input_ids"].numpy()
    assert ids[0] == CLS and ids[mask.sum() - 1] == SEP and (ids[mask == 0] == 0).all()
    weights = parsed["masked_lm_weights"].numpy()
    assert weights.sum() >= 1 and set(np.unique(weights)) <= {0.0, 1.0}
    with open(out / "metadata.json") as file:
        assert json.load(file)["masking"] == "static"
    assert (out / "vocab.txt").read_text().split("\n")[:5] == toy_vocabulary()[:5]


def test_loader_reads_records_of_the_original_tool(tmp_path):
    """TFRecords written as the original `create_pretraining_data.py` does
    (same features, int64/float lists) load without kbert metadata."""
    import tensorflow as tf

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    path = str(tmp_path / "original.tfrecord")
    rows = []
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(5):
            input_ids = [2, 10 + i, 4, 12, 3, 20, 4, 3] + [0] * 8
            features = {
                "input_ids": int_feature(input_ids),
                "input_mask": int_feature([1] * 8 + [0] * 8),
                "segment_ids": int_feature([0] * 5 + [1] * 3 + [0] * 8),
                "masked_lm_positions": int_feature([2, 6, 0, 0]),
                "masked_lm_ids": int_feature([11, 21, 0, 0]),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0, 1.0, 0.0, 0.0])
                ),
                "next_sentence_labels": int_feature([i % 2]),
            }
            rows.append(input_ids)
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())
    with pytest.raises(ValueError, match="max_seq_length"):
        pretraining_dataset(path, 2, training=False)
    batches = list(
        pretraining_dataset(
            path, 2, max_seq_length=16, max_predictions_per_seq=4, training=False
        )
    )
    assert len(batches) == 3
    x, y, sample_weight = batches[0]
    assert sorted(x) == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    np.testing.assert_array_equal(x["token_ids"].numpy(), rows[:2])
    np.testing.assert_array_equal(x["mask_positions"].numpy(), [[2, 6, 0, 0]] * 2)
    np.testing.assert_array_equal(y["mlm_logits"].numpy(), [[11, 21, 0, 0]] * 2)
    np.testing.assert_array_equal(y["nsp_logits"].numpy(), [0, 1])
    np.testing.assert_array_equal(sample_weight["mlm_logits"].numpy(), [[1, 1, 0, 0]] * 2)
    np.testing.assert_array_equal(sample_weight["nsp_logits"].numpy(), [1, 1])
    assert (
        x["token_ids"].dtype == "int32" and sample_weight["mlm_logits"].dtype == "float32"
    )


def test_creation_is_deterministic_per_seed(tmp_path):
    def make(name, seed):
        out = tmp_path / name
        create_pretraining_data(
            synthetic_documents(40),
            out,
            ToyTokenizer(),
            max_seq_length=24,
            max_predictions_per_seq=4,
            dupe_factor=1,
            seed=seed,
            progress=False,
        )
        return (out / "data-00000-of-00001.tfrecord").read_bytes()

    assert make("a", 1) == make("b", 1)
    assert make("a", 1) != make("c", 2)


def test_training_stream_is_resumable_at_any_step(static_data):
    out, _ = static_data
    full = [b[0]["token_ids"].numpy() for b in pretraining_dataset(out, 8, seed=3).take(30)]
    late = [
        b[0]["token_ids"].numpy()
        for b in pretraining_dataset(out, 8, seed=3, start_step=27).take(3)
    ]
    for a, b in zip(full[27:], late):
        np.testing.assert_array_equal(a, b)
    # 30 batches of 8 > one epoch: epochs come in a fresh order, not a replay.
    other_seed = next(iter(pretraining_dataset(out, 8, seed=4)))[0]["token_ids"].numpy()
    assert not np.array_equal(full[0], other_seed)


def test_dynamic_masks_change_every_epoch_and_depend_only_on_step(tmp_path):
    out = tmp_path / "dynamic"
    metadata = create_pretraining_data(
        synthetic_documents(30),
        out,
        ToyTokenizer(),
        max_seq_length=24,
        max_predictions_per_seq=4,
        dupe_factor=1,
        masking="dynamic",
        progress=False,
    )
    assert metadata["masking"] == "dynamic"
    import tensorflow as tf

    example = tf.train.Example.FromString(
        next(
            iter(tf.data.TFRecordDataset(str(out / "data-00000-of-00001.tfrecord")))
        ).numpy()
    )
    assert "masked_lm_ids" not in example.features.feature
    n = metadata["num_instances"]
    # Unshuffled (buffer 1) epochs: the same sequences, masked differently.
    batches = list(pretraining_dataset(out, n, shuffle_buffer_size=1).take(2))
    (x1, y1, _), (x2, y2, _) = batches
    np.testing.assert_array_equal(x1["segment_ids"], x2["segment_ids"])
    assert not np.array_equal(x1["mask_positions"], x2["mask_positions"])
    again = next(iter(pretraining_dataset(out, n, shuffle_buffer_size=1)))[0]
    np.testing.assert_array_equal(again["token_ids"], x1["token_ids"])


def test_memory_stays_flat_as_the_corpus_grows(tmp_path):
    tokenizer = ToyTokenizer()

    def create(num_documents, name):
        create_pretraining_data(
            lambda: iter_synthetic_documents(num_documents, seed=9),  # a stream
            tmp_path / name,
            tokenizer,
            max_seq_length=32,
            max_predictions_per_seq=5,
            dupe_factor=1,
            document_buffer_size=20,
            shuffle_buffer_size=50,
            progress=False,
        )
        return count_records(tmp_path / name)

    def peak(num_documents, name):
        tracemalloc.start()
        try:
            count = create(num_documents, name)
            return count, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    create(20, "warmup")  # imports and caches, untraced
    # Both runs fill every buffer (> 256 + 50 sequences), then only stream.
    small_count, small = peak(150, "small")
    large_count, large = peak(450, "large")
    assert small_count > 350 and large_count > 2.5 * small_count
    assert large < 1.15 * small, (small, large)


def test_one_shot_iterators_refuse_several_passes(tmp_path):
    with pytest.raises(ValueError, match="one-shot iterator"):
        create_pretraining_data(
            iter(synthetic_documents(5)), tmp_path / "x", ToyTokenizer(), dupe_factor=2
        )
    assert not os.path.exists(tmp_path / "x")
