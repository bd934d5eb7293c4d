"""`from_preset`: recognise where a checkpoint comes from and load it."""

import os

from kbert.presets.registry import PRESETS, resolve_preset

FORMATS = (
    ("backbone.json", "a kbert preset"),
    ("config.json", "a Hugging Face model directory"),
    ("bert_config.json", "an original Google BERT directory"),
)


def resolve_source(source):
    """A registered name or a path -> an existing directory."""
    source = os.fspath(source)
    if source in PRESETS:
        return resolve_preset(source)
    if os.path.isdir(source):
        return source
    raise ValueError(
        f"Preset {source!r} is neither a directory nor a registered name; "
        f"registered names: {sorted(PRESETS)}."
    )


PREPROCESSOR_OVERRIDES = ("sequence_length", "truncation", "return_offsets")


def load_preprocessor(directory, **overrides):
    """The preprocessor stored beside a checkpoint, or None when it has no vocabulary."""
    vocabulary_files = ("vocab.txt", "tokenizer.json")
    if not any(os.path.isfile(os.path.join(directory, f)) for f in vocabulary_files):
        return None
    from kbert.preprocessing.preprocessor import BertPreprocessor

    return BertPreprocessor.from_preset(directory, **overrides)


def load_preset(cls, source, preprocessor="auto", **overrides):
    directory = resolve_source(source)
    preprocessor_overrides = {
        key: overrides.pop(key) for key in PREPROCESSOR_OVERRIDES if key in overrides
    }
    if preprocessor == "auto":
        preprocessor = (
            None
            if cls.__name__ == "BertBackbone"
            else load_preprocessor(directory, **preprocessor_overrides)
        )
    if os.path.isfile(os.path.join(directory, "backbone.json")):
        from kbert.presets.kbert_format import load_kbert_preset

        return load_kbert_preset(cls, directory, preprocessor, **overrides)
    if os.path.isfile(os.path.join(directory, "config.json")):
        from kbert.presets.huggingface import load_huggingface_preset

        return load_huggingface_preset(cls, directory, preprocessor, **overrides)
    if os.path.isfile(os.path.join(directory, "bert_config.json")):
        from kbert.presets.google import load_google_preset

        return load_google_preset(cls, directory, preprocessor, **overrides)
    expected = ", ".join(f"{name} ({what})" for name, what in FORMATS)
    raise ValueError(
        f"{directory} holds no checkpoint kbert knows: expected one of {expected}."
    )
