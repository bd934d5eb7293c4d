"""Loading the model an export starts from: a `.keras` file or any checkpoint."""

import os

import keras

from kbert.presets.formats import load_checkpoint


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
        return keras.saving.load_model(source)
    return load_checkpoint(source, **overrides)
