"""The checkpoint formats kbert reads, in one table.

Each row says how a directory of that format is recognised, which function
loads a model class from it and how the task it holds is detected.
`from_preset` (every model class), `kbert convert` and the model loading of
`kbert export` / `kbert verify` all go through `FORMATS`; a new format is a
new row (and its module).
"""

import dataclasses
import os

from kbert.models import model_class, preset_io
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.presets.assemble import check_overrides
from kbert.presets.google import google_task, is_google_directory, load_google_preset
from kbert.presets.huggingface import (
    hf_task,
    is_hf_directory,
    is_sentence_transformers_directory,
    load_huggingface_preset,
)
from kbert.presets.kbert_format import (
    is_kbert_preset,
    kbert_preset_task,
    load_kbert_preset,
    save_kbert_preset,
)
from kbert.presets.keras_hub import (
    is_keras_hub_directory,
    keras_hub_task,
    load_keras_hub_preset,
)
from kbert.sources import resolve_source


@dataclasses.dataclass(frozen=True)
class CheckpointFormat:
    """One row of `FORMATS`.

    Attributes:
        description: what the format is, for messages.
        marker: the file that identifies it, for messages.
        recognise: `directory -> bool`.
        load: `(cls, directory, preprocessor, **overrides) -> model`.
        detect_task: `directory -> task name` (`kbert.models.MODEL_CLASSES`).
    """

    description: str
    marker: str
    recognise: callable
    load: callable
    detect_task: callable


# Tried in order: the first format that recognises a directory reads it.
FORMATS = (
    CheckpointFormat(
        "a kbert preset",
        "backbone.json",
        is_kbert_preset,
        load_kbert_preset,
        kbert_preset_task,
    ),
    CheckpointFormat(
        "a keras-hub preset",
        "config.json of a keras_hub>BertBackbone",
        is_keras_hub_directory,
        load_keras_hub_preset,
        keras_hub_task,
    ),
    CheckpointFormat(
        "a sentence-transformers directory",
        "config.json + modules.json",
        is_sentence_transformers_directory,
        load_huggingface_preset,
        lambda directory: "text_embedder",
    ),
    CheckpointFormat(
        "a Hugging Face model directory",
        "config.json",
        is_hf_directory,
        load_huggingface_preset,
        hf_task,
    ),
    CheckpointFormat(
        "an original Google BERT directory",
        "bert_config.json",
        is_google_directory,
        load_google_preset,
        google_task,
    ),
)
PREPROCESSOR_OVERRIDES = (
    "sequence_length",
    "truncation",
    "return_offsets",
    "normalization",
)
VOCABULARY_FILES = ("vocab.txt", "tokenizer.json")
# Embedding rows a table may hold past its vocabulary: tables padded to a
# multiple of 64 or 128 for speed (MosaicBERT: 30,528 rows, 30,522 pieces).
PADDING_ROWS = 128


def checkpoint_format(directory):
    """The `CheckpointFormat` of a directory; raises a `ValueError` naming the
    files each format needs when none recognises it.

    Example:
    >>> checkpoint_format(minilm_dir).description
    'a sentence-transformers directory'
    """
    for checkpoint in FORMATS:
        if checkpoint.recognise(directory):
            return checkpoint
    expected = ", ".join(f"{f.marker} ({f.description})" for f in FORMATS)
    raise ValueError(
        f"{directory} holds no checkpoint kbert knows: expected one of {expected}."
    )


def detect_task(source):
    """The task name a checkpoint holds, judged from its files.

    Example:
    >>> detect_task("all_minilm_l6_v2"), detect_task("splade_tiny_mlm")
    ('text_embedder', 'masked_lm')
    """
    directory = resolve_source(source)
    return checkpoint_format(directory).detect_task(directory)


def load_preprocessor(directory, **overrides):
    """The preprocessor stored beside a checkpoint, or None when it has no vocabulary.

    Example:
    >>> load_preprocessor(minilm_dir, sequence_length=64).sequence_length
    64
    """
    if not _has_vocabulary(directory):
        return None
    return BertPreprocessor.from_preset(directory, **overrides)


def load_preset(cls, source, preprocessor="auto", **overrides):
    """`cls.from_preset(source, **overrides)`: builds `cls` from any format.

    `preprocessor="auto"` loads the one stored beside the checkpoint (none
    for a backbone); its `sequence_length`, `truncation`, `return_offsets`
    and tokenizer `normalization` can be overridden here too.

    Example:
    >>> load_preset(kbert.BertMaskedLM, "splade_tiny_mlm").preprocessor.sequence_length
    512
    """
    directory = resolve_source(source)
    checkpoint = checkpoint_format(directory)
    check_overrides(
        cls,
        overrides,
        PREPROCESSOR_OVERRIDES,
        _no_preprocessor(cls, directory, preprocessor),
    )
    preprocessor_overrides = {
        key: overrides.pop(key) for key in PREPROCESSOR_OVERRIDES if key in overrides
    }
    loaded_here = preprocessor == "auto"
    if loaded_here:
        preprocessor = (
            None
            if cls.task_name == "backbone"
            else load_preprocessor(directory, **preprocessor_overrides)
        )
    model = checkpoint.load(cls, directory, preprocessor, **overrides)
    if loaded_here:
        check_vocabulary(model, directory)
    return model


def _has_vocabulary(directory):
    return any(os.path.isfile(os.path.join(directory, f)) for f in VOCABULARY_FILES)


def _no_preprocessor(cls, directory, preprocessor):
    """Why `load_preset` loads no preprocessor to take its overrides, or None."""
    if preprocessor != "auto":
        return "a preprocessor was passed: set it there."
    if cls.task_name == "backbone":
        return (
            f"{cls.__name__}.from_preset loads none: use "
            "BertPreprocessor.from_preset(source, ...)."
        )
    if not _has_vocabulary(directory):
        return f"{directory} holds no {' or '.join(VOCABULARY_FILES)} to build one from."
    return None


def check_vocabulary(model, directory):
    """Raises a `ValueError` when the vocabulary loaded beside a checkpoint
    does not fit its embedding table: longer (ids past the table) or shorter
    by more than padding (a vocabulary file of another model).

    Example:
    >>> check_vocabulary(load_preset(kbert.BertMaskedLM, "splade_tiny_mlm"), "dir")
    """
    tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    backbone = getattr(model, "backbone", None)
    if tokenizer is None or backbone is None:
        return
    pieces, rows = tokenizer.vocabulary_size(), backbone.vocabulary_size
    if rows - PADDING_ROWS < pieces <= rows:
        return
    found = [f for f in VOCABULARY_FILES if os.path.isfile(os.path.join(directory, f))]
    path = os.path.join(directory, found[0]) if found else f"the vocabulary of {directory}"
    fits = "longer" if pieces > rows else "shorter"
    raise ValueError(
        f"{path} holds {pieces:,} word pieces, but the checkpoint's embedding table "
        f"has {rows:,} rows (vocabulary_size): a {fits} vocabulary is another "
        "model's and would map text to the wrong ids. Put this checkpoint's "
        "vocabulary there, or pass preprocessor= (None for no preprocessor)."
    )


def load_checkpoint(source, task="auto", **overrides):
    """The model a checkpoint holds (`task="auto"`), or the task asked for.

    Example:
    >>> type(load_checkpoint("splade_tiny_mlm")).__name__
    'BertMaskedLM'
    """
    directory = resolve_source(source)
    if task == "auto":
        task = detect_task(directory)
    return model_class(task).from_preset(directory, **overrides)


preset_io.use_preset_formats(load_preset, save_kbert_preset)
