"""Loading the model an export starts from: a `.keras` file or any checkpoint."""

import os

import keras

from kbert.models import model_classes
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.presets.formats import load_checkpoint
from kbert.sources import resolve_source


def register_kbert_classes():
    """Imports every kbert class a `.keras` file may name, so Keras finds them.

    `import kbert` loads no model class until one is used (a light
    `kbert --help`); `keras.saving.load_model` looks classes up by their
    registered names, so a process that only loads a file calls this first.

    Example:
    >>> register_kbert_classes()
    >>> "kbert>BertClassifier" in keras.saving.get_custom_objects()
    True
    """
    model_classes()
    BertPreprocessor  # noqa: B018 - imported above: registers the preprocessing layers


def load_model(source, **overrides):
    """A kbert model from a `.keras` file, a checkpoint directory or a registered name.

    Directories are anything `from_preset` reads (kbert preset, Hugging Face
    or Google BERT directory); the task is the one the checkpoint holds.
    `overrides` go to `from_preset` (e.g. `num_classes`).

    Example:
    >>> type(load_model("splade_tiny_mlm")).__name__
    'BertMaskedLM'
    """
    source = os.fspath(source)
    if source.endswith(".keras"):
        if not os.path.isfile(source):
            raise ValueError(f"No such .keras file: {source}.")
        register_kbert_classes()
        return keras.saving.load_model(source)
    # Resolved once (a registered name or hf:// handle to its local directory):
    # what loads it below reads that directory.
    return load_checkpoint(resolve_source(source), **overrides)
