"""Loading the model an export starts from: a preset directory or `.keras` file."""

import os


def load_model(source, **overrides):
    """A kbert model from a `.keras` file, a preset directory or a registered name.

    Directories are anything `from_preset` reads (kbert preset, Hugging Face
    or Google BERT directory); the task is the one the checkpoint holds.
    `overrides` go to `from_preset` (e.g. `num_classes`).

    Example:
    >>> model = load_model("out/sst2_classifier")     # a kbert preset
    >>> model = load_model("out/classifier.keras")
    """
    import keras

    import kbert.preprocessing  # noqa: F401 - registers the preprocessor classes

    source = os.fspath(source)
    if source.endswith(".keras"):
        if not os.path.isfile(source):
            raise ValueError(f"No such .keras file: {source}.")
        return keras.saving.load_model(source)
    from kbert.presets.loader import resolve_source
    from kbert.presets.tasks import TASK_CLASSES, detect_task

    directory = resolve_source(source)
    return TASK_CLASSES[detect_task(directory)].from_preset(directory, **overrides)
