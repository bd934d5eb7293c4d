"""`distributed_predict`: a task model's `predict` on a dataset of strings, in
shards on worker processes (Ray Data; see `kbert.utils.ray_engine`).

The texts are cut into shards of `shard_size` consecutive texts (a shard
never spans two input files). Each worker loads the model once and runs
`model.predict` on whole shards, so every shard is batched by length as
`predict` batches; the shards' outputs come back in input order. A shard whose
worker fails runs again (Ray's task retries) and counts once. Texts cut to the
sequence length are counted by the workers and reported once per call, where
it was made: one `kbert.TruncationWarning` with the counts of every shard.
"""

import functools
import os
import tempfile

import numpy as np

from kbert.models import model_class
from kbert.presets.formats import load_checkpoint
from kbert.utils import ray_engine
from kbert.utils.long_texts import LONG_TEXTS, add_held, held_truncations, warn_held
from kbert.utils.text_files import expand_glob, read_lines

DEFAULT_SHARD_SIZE = 1000


def distributed_predict(
    model,
    texts,
    engine="ray",
    workers=2,
    task="auto",
    shard_size=DEFAULT_SHARD_SIZE,
    batch_size=None,
    long_texts="truncate",
    stride=None,
    address=None,
    init_args=None,
    **overrides,
):
    """`model.predict(texts)`, computed shard by shard on `workers` processes.

    Args:
        model: a task model with a preprocessor, or a preset source (a
            directory, a registered name, an `hf://` handle) that each worker
            loads (`task`: the task to build, "auto" for the one it holds;
            `**overrides` such as `sequence_length` go to `from_preset`).
        texts: a list of strings, or a path or glob of text files (one text
            per line, blank lines kept; files in sorted order).
        engine: "ray" (Ray Data actors) or "local" (this process, the same
            shards: the reference).
        address, init_args: a Ray cluster to join and extra `ray.init`
            arguments; without `address` a local Ray starts on 127.0.0.1.

    Returns what `model.predict(texts)` returns: an array, or a dict of arrays.

    Example:
    >>> classifier = kbert.BertClassifier(backbone, 2, preprocessor=preprocessor)
    >>> texts = ["the fox", "", "a quick brown fox jumps"]
    >>> outputs = distributed_predict(classifier, texts, engine="local", shard_size=2)
    >>> np.allclose(outputs, classifier.predict(texts, verbose=0), atol=1e-5)
    True
    """
    shards = [texts for _, texts in text_shards(texts, shard_size)]
    return concatenate(
        predict_shards(
            model,
            shards,
            engine,
            workers,
            task,
            batch_size,
            long_texts,
            stride,
            address,
            init_args,
            **overrides,
        )
    )


def predict_shards(
    model,
    shards,
    engine="ray",
    workers=2,
    task="auto",
    batch_size=None,
    long_texts="truncate",
    stride=None,
    address=None,
    init_args=None,
    **overrides,
):
    """Yields the outputs of each shard (a list of texts), in order; texts
    cut to the sequence length give one `kbert.TruncationWarning` for all
    the shards, with the last shard's outputs."""
    ray_engine.check_engine(engine, workers)
    if long_texts not in LONG_TEXTS:  # here, before any worker starts
        raise ValueError(
            f"long_texts must be one of {LONG_TEXTS}; received long_texts={long_texts!r}."
        )
    with tempfile.TemporaryDirectory() as scratch:
        if isinstance(model, str | os.PathLike):
            source = os.fspath(model)
        else:
            if getattr(model, "preprocessor", None) is None:
                raise ValueError(
                    "distributed_predict needs a model with a preprocessor (texts in): "
                    "load it with from_preset, or pass `preprocessor=` when building it."
                )
            model.save_to_preset(scratch)
            source, task = _packed(scratch), model.task_name
        make_worker = functools.partial(
            ShardPredictor,
            source,
            task,
            overrides,
            dict(batch_size=batch_size, long_texts=long_texts, stride=stride),
        )
        held = {}  # the shards' truncation counts, summed
        results = ray_engine.ordered_map(
            make_worker, shards, engine, workers, address, init_args
        )
        # One shard behind, to warn before the last yield: a caller may stop
        # at the last item (zip); the shards stay a stream, never a list.
        previous = None
        for outputs, counts in results:
            add_held(held, counts)
            if previous is not None:
                yield previous
            previous = outputs
        warn_held(held)
        if previous is not None:
            yield previous


class ShardPredictor:
    """A worker: loads the model once; called on a shard, returns its outputs
    and the counts of the texts it cut (`held_truncations`: the caller
    warns once for all the shards, not each worker for its own).

    `source` is a preset source or a packed preset (`{relative path: bytes}`,
    for a model built in the calling process).
    """

    def __init__(self, source, task, overrides, predict_options):
        self.scratch = None
        if isinstance(source, dict):
            self.scratch = tempfile.TemporaryDirectory()
            source = _unpack(source, self.scratch.name)
        if task == "auto":
            self.model = load_checkpoint(source, **overrides)
        else:
            self.model = model_class(task).from_preset(source, **overrides)
        self.options = predict_options

    def __call__(self, texts):
        with held_truncations() as counts:
            outputs = self.model.predict(list(texts), verbose=0, **self.options)
        if isinstance(outputs, dict):
            return {name: np.asarray(value) for name, value in outputs.items()}, counts
        return np.asarray(outputs), counts


def text_shards(texts, shard_size=DEFAULT_SHARD_SIZE):
    """`(file index, texts)` shards of at most `shard_size` consecutive texts.

    `texts` is a list of strings (file index 0) or a path or glob of text
    files; a shard never spans two files.

    Example:
    >>> [(i, len(s)) for i, s in text_shards(["a", "b", "", "d", "e"], shard_size=2)]
    [(0, 2), (0, 2), (0, 1)]
    """
    if int(shard_size) < 1:
        raise ValueError(f"shard_size must be at least 1; got {shard_size}.")
    if isinstance(texts, str | os.PathLike):
        files = [read_lines(path) for path in expand_glob(texts)]
    else:
        files = [list(texts)]
        bad = [i for i, text in enumerate(files[0]) if not isinstance(text, str)]
        if bad:
            raise ValueError(
                f"texts must be strings; text {bad[0]} is "
                f"{type(files[0][bad[0]]).__name__}."
            )
    if not any(files):
        raise ValueError("No texts to predict.")
    return [
        (index, lines[start : start + shard_size])
        for index, lines in enumerate(files)
        for start in range(0, len(lines), shard_size)
    ]


def concatenate(parts):
    """Joins per-shard outputs along the first axis; other axes that differ
    (per-token outputs of windowed long texts) are zero-padded to the longest.

    Example:
    >>> concatenate([np.ones((2, 3)), np.zeros((1, 4))]).shape
    (3, 4)
    """
    parts = list(parts)
    if isinstance(parts[0], dict):
        return {name: concatenate([part[name] for part in parts]) for name in parts[0]}
    shape = np.max([part.shape for part in parts], axis=0)
    padded = [
        np.pad(part, [(0, 0)] + [(0, n - s) for n, s in zip(shape[1:], part.shape[1:])])
        for part in parts
    ]
    return np.concatenate(padded, axis=0)


def _packed(directory):
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                files[os.path.relpath(path, directory)] = file.read()
    return files


def _unpack(files, directory):
    for relative, data in files.items():
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(data)
    return directory
