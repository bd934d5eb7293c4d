"""Create pretraining data: documents -> sentence pairs -> masks -> TFRecords.

The streaming counterpart of the original `create_pretraining_data.py`.
Documents are read `document_buffer_size` at a time (random B segments come
from the same window), instances leave through a bounded shuffle buffer, and
records stream to disk, so memory stays flat however large the corpus is.
`dupe_factor` passes over the corpus give each document several different
pairings and masks.

Work is cut into windows of `document_buffer_size` documents per pass, each
seeded by `(seed, pass, window)` (`WindowRecords`), so `engine="ray"` runs
the windows on Ray Data workers and writes what the one-process run writes.

Two modes: `masking="static"` masks once here and writes the original
features (`masked_lm_*` included); `masking="dynamic"` writes unmasked pairs
and `pretraining_dataset` masks them anew every epoch.
"""

import dataclasses
import functools
import json
import os
import random

import numpy as np
from tqdm.auto import tqdm

from kbert.pretraining.documents import read_documents
from kbert.pretraining.instances import create_pair_instances
from kbert.pretraining.masking import MaskedLMMasker, load_vocabulary
from kbert.pretraining.tfrecords import ShardedRecordWriter, serialize_example
from kbert.utils.atomic import atomic_directory
from kbert.utils.ray_engine import check_engine, ordered_map

METADATA_FILE = "metadata.json"
VOCABULARY_FILE = "vocab.txt"
_MASKING_BATCH = 256


def create_pretraining_data(
    documents,
    output_dir,
    tokenizer,
    vocabulary=None,
    max_seq_length=128,
    max_predictions_per_seq=20,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
    dupe_factor=10,
    whole_word_masking=False,
    masking="static",
    seed=12345,
    num_shards=1,
    document_buffer_size=1000,
    shuffle_buffer_size=10000,
    progress=True,
    engine="local",
    workers=2,
    address=None,
    init_args=None,
):
    """Writes pretraining TFRecords plus `metadata.json` and `vocab.txt`.

    Args:
        documents: text file paths in the original format (one sentence per
            line, blank line between documents), a re-iterable of documents
            (each a list of sentence strings), or a function returning a
            fresh iterable of them (read once per `dupe_factor` pass).
        output_dir: written atomically: it appears complete or not at all.
        tokenizer: a `kbert.BertTokenizer`, or any function from a list of
            strings to token ids (a `tf.RaggedTensor` or lists of ints).
        vocabulary: list of tokens or `vocab.txt` path; defaults to
            `tokenizer.get_vocabulary()`.
        masking: "static" (mask here, `dupe_factor` times) or "dynamic".
        engine: "local" (this process) or "ray": windows of documents are
            tokenized, paired and masked on `workers` Ray Data workers (a
            local Ray on 127.0.0.1, or the cluster at `address`; `init_args`
            go to `ray.init`), and this process writes their records in
            window order: the same files as the local run, byte for byte.

    Returns the metadata dict (`num_instances`, `num_tokens`, file names...).

    Example:
    >>> tokenizer = kbert.BertTokenizer(vocabulary=vocab_file)
    >>> metadata = create_pretraining_data([corpus_file], "data/train", tokenizer,
    ...                                    max_seq_length=16, dupe_factor=2, progress=False)
    >>> metadata["max_seq_length"], metadata["num_instances"] > 0
    (16, True)
    """
    check_engine(engine, workers)
    if masking not in ("static", "dynamic"):
        raise ValueError(f"masking must be 'static' or 'dynamic'; got {masking!r}.")
    if vocabulary is None:
        if not hasattr(tokenizer, "get_vocabulary"):
            raise ValueError("Pass `vocabulary=`: the tokenizer has no get_vocabulary().")
        vocabulary = tokenizer.get_vocabulary()
    vocabulary = load_vocabulary(vocabulary)
    for token in ("[CLS]", "[SEP]", "[MASK]", "[PAD]"):
        if token not in vocabulary:
            raise ValueError(f"The vocabulary has no {token} token.")
    cls_id, sep_id = vocabulary.index("[CLS]"), vocabulary.index("[SEP]")
    open_documents = _document_source(documents, dupe_factor)
    masker = MaskedLMMasker(
        vocabulary,
        masked_lm_prob=masked_lm_prob,
        max_predictions_per_seq=max_predictions_per_seq,
        whole_word_masking=whole_word_masking,
    )
    make_worker = functools.partial(
        WindowRecords,
        tokenizer,
        cls_id,
        sep_id,
        masker if masking == "static" else None,
        max_seq_length,
        short_seq_prob,
        seed,
    )
    tasks = window_tasks(open_documents, dupe_factor, document_buffer_size)
    results = ordered_map(make_worker, tasks, engine, workers, address, init_args)
    shuffle_buffer = _ShuffleBuffer(shuffle_buffer_size, random.Random(seed))
    total = _length_or_none(documents)
    bar = _progress_bar(progress, total * dupe_factor if total else None)
    num_tokens = 0

    with atomic_directory(output_dir) as tmp:
        with ShardedRecordWriter(os.path.join(tmp, "data"), num_shards) as writer:
            for records, tokens, num_documents in results:
                num_tokens += tokens
                for record in records:
                    record = shuffle_buffer.add(record)
                    if record is not None:
                        writer.write(record)
                bar.update(num_documents)
            for record in shuffle_buffer.drain():
                writer.write(record)
        bar.close()
        metadata = {
            "format": "kbert-pretraining-tfrecord",
            "masking": masking,
            "max_seq_length": max_seq_length,
            "max_predictions_per_seq": max_predictions_per_seq,
            "masked_lm_prob": masked_lm_prob,
            "whole_word_masking": whole_word_masking,
            "short_seq_prob": short_seq_prob,
            "dupe_factor": dupe_factor,
            "seed": seed,
            "vocabulary_size": len(vocabulary),
            "num_instances": writer.num_records,
            "num_tokens": num_tokens,
            "files": [os.path.basename(path) for path in writer.paths],
        }
        with open(os.path.join(tmp, METADATA_FILE), "w") as file:
            json.dump(metadata, file, indent=2)
        with open(os.path.join(tmp, VOCABULARY_FILE), "w", encoding="utf-8") as file:
            file.writelines(token + "\n" for token in vocabulary)
    return metadata


@dataclasses.dataclass(frozen=True)
class WindowTask:
    """One unit of work: a window of documents in one `dupe_factor` pass.

    `previous` holds the window before it when this one may have a single
    document (its random B segments then come from there), else None.
    """

    pass_index: int
    window_index: int
    documents: list
    previous: list = None


def window_tasks(open_documents, dupe_factor, size):
    """The `WindowTask`s of every pass, in order: windows of `size` documents.

    Example:
    >>> documents = [["a b.", "c d."], ["e f."], ["g h."]]
    >>> [(t.pass_index, t.window_index, len(t.documents))
    ...  for t in window_tasks(lambda: documents, dupe_factor=2, size=2)]
    [(0, 0, 2), (0, 1, 1), (1, 0, 2), (1, 1, 1)]
    """
    for pass_index in range(dupe_factor):
        previous = []
        for index, window in enumerate(_windows(open_documents(), size)):
            alone = sum(any(s.strip() for s in document) for document in window) < 2
            yield WindowTask(pass_index, index, window, previous if alone else None)
            previous = window


class WindowRecords:
    """A worker: a window's documents -> sentence pairs -> (masked) records.

    Everything random is seeded by `(seed, pass, window)`, so a window gives
    the same records in any process and in any order: the one-process run
    and a run on a distributed engine write the same instances. Called on a
    `WindowTask`, returns `(serialized records, real tokens, documents)`.
    """

    def __init__(
        self, tokenizer, cls_id, sep_id, masker, max_seq_length, short_seq_prob, seed
    ):
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = cls_id, sep_id
        self.masker = masker
        self.max_seq_length = max_seq_length
        self.short_seq_prob = short_seq_prob
        self.seed = seed
        self._mask_fn = None

    def _shuffled(self, documents, pass_index, window_index):
        rng = random.Random(f"{self.seed}/{pass_index}/{window_index}")
        tokenized = _tokenize_documents(self.tokenizer, documents)
        rng.shuffle(tokenized)
        return tokenized, rng

    def __call__(self, task):
        tokenized, rng = self._shuffled(task.documents, task.pass_index, task.window_index)
        previous = []
        if task.previous and len(tokenized) == 1:
            previous = self._shuffled(
                task.previous, task.pass_index, task.window_index - 1
            )[0]
        instances = []
        for index, document in enumerate(tokenized):
            others = _Others(tokenized, index, fallback=previous)
            instances.extend(
                create_pair_instances(
                    document,
                    others,
                    rng,
                    self.cls_id,
                    self.sep_id,
                    max_seq_length=self.max_seq_length,
                    short_seq_prob=self.short_seq_prob,
                )
            )
        records, tokens = [], 0
        for batch, start in enumerate(range(0, len(instances), _MASKING_BATCH)):
            chunk = instances[start : start + _MASKING_BATCH]
            mask_seed = (task.pass_index << 40) | (task.window_index << 16) | batch
            tokens += self._encode(chunk, mask_seed, records)
        return records, tokens, len(task.documents)

    def _encode(self, instances, mask_seed, records):
        """Pads `instances`, masks them (static mode), appends their records."""
        size = len(instances)
        input_ids = np.zeros((size, self.max_seq_length), "int64")
        segment_ids = np.zeros_like(input_ids)
        for row, instance in enumerate(instances):
            input_ids[row, : len(instance.token_ids)] = instance.token_ids
            segment_ids[row, : len(instance.segment_ids)] = instance.segment_ids
        input_mask = (
            np.arange(self.max_seq_length)[None]
            < np.array([len(instance.token_ids) for instance in instances])[:, None]
        ).astype("int64")
        labels = np.array([int(i.is_random_next) for i in instances], "int64")
        masked = self._mask(input_ids, input_mask, mask_seed) if self.masker else None
        for row in range(size):
            features = {
                "input_ids": input_ids[row],
                "input_mask": input_mask[row],
                "segment_ids": segment_ids[row],
            }
            if masked is not None:
                features["input_ids"] = masked["token_ids"][row]
                features["masked_lm_positions"] = masked["mask_positions"][row]
                features["masked_lm_ids"] = masked["mask_ids"][row]
                features["masked_lm_weights"] = masked["mask_weights"][row]
            features["next_sentence_labels"] = labels[row : row + 1]
            records.append(serialize_example(features))
        return int(input_mask.sum())

    def _mask(self, input_ids, input_mask, mask_seed):
        import tensorflow as tf  # lazy: TF only when pretraining data is created or read

        if self._mask_fn is None:
            ids = tf.TensorSpec([None, self.max_seq_length], tf.int64)
            seed = tf.TensorSpec([2], tf.int64)
            self._mask_fn = tf.function(
                self.masker.__call__, input_signature=[ids, ids, seed]
            )
        seed = tf.constant([self.seed, mask_seed], tf.int64)
        out = self._mask_fn(tf.constant(input_ids), tf.constant(input_mask), seed)
        return {name: value.numpy() for name, value in out.items()}


class _ShuffleBuffer:
    """Returns a random earlier item once full; bounded memory, like tf.data's."""

    def __init__(self, size, rng):
        self.size = max(1, int(size))
        self.rng = rng
        self.items = []

    def add(self, item):
        if len(self.items) < self.size:
            self.items.append(item)
            return None
        index = self.rng.randrange(self.size)
        item, self.items[index] = self.items[index], item
        return item

    def drain(self):
        self.rng.shuffle(self.items)
        items, self.items = self.items, []
        return items


class _Others:
    """`documents` without the one at `index` (the previous window if alone)."""

    def __init__(self, documents, index, fallback=()):
        self.documents = documents
        self.index = index
        self.fallback = fallback if len(documents) == 1 else ()

    def __len__(self):
        return len(self.documents) - 1 + len(self.fallback)

    def __getitem__(self, i):
        if i < len(self.documents) - 1:
            return self.documents[i + (i >= self.index)]
        return self.fallback[i - len(self.documents) + 1]


def _document_source(documents, dupe_factor):
    if isinstance(documents, str) or hasattr(documents, "__fspath__"):
        documents = [documents]
    if callable(documents):
        return documents
    documents = documents if not isinstance(documents, tuple) else list(documents)
    if iter(documents) is documents:
        if dupe_factor > 1:
            raise ValueError(
                "`documents` is a one-shot iterator but dupe_factor > 1 needs "
                "several passes: pass a list, file paths or a function returning "
                "a fresh iterable."
            )
        return lambda: documents
    if documents and all(isinstance(d, str) for d in documents):
        return lambda: read_documents(documents)
    return lambda: iter(documents)


def _length_or_none(documents):
    if isinstance(documents, list | tuple) and not (
        documents and isinstance(documents[0], str)
    ):
        return len(documents)
    return None


def _windows(documents, size):
    window = []
    for document in documents:
        window.append(document)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def _tokenize_documents(tokenizer, documents):
    """Token ids per sentence per document; empty sentences and documents go."""
    sentences = [sentence for document in documents for sentence in document]
    ids = _token_id_lists(tokenizer, sentences)
    tokenized, start = [], 0
    for document in documents:
        pieces = [s for s in ids[start : start + len(document)] if len(s)]
        start += len(document)
        if pieces:
            tokenized.append(pieces)
    return tokenized


def _token_id_lists(tokenizer, texts):
    if not texts:
        return []
    out = tokenizer(texts)
    if hasattr(out, "to_list"):  # tf.RaggedTensor
        return [[int(t) for t in row] for row in out.to_list()]
    return [[int(t) for t in np.asarray(row).reshape(-1)] for row in out]


def _progress_bar(enabled, total):
    return tqdm(
        total=total, unit="doc", desc="create pretraining data", disable=not enabled
    )
