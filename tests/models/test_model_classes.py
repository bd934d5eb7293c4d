"""`kbert.models`: the task names the command line offers are the classes' own."""

import kbert
from kbert.models import MODEL_CLASSES, model_class, task_names


def test_task_names_are_the_classes_task_names_in_detection_order():
    assert task_names() == tuple(cls.task_name for cls in MODEL_CLASSES)
    for name in task_names():
        assert model_class(name).task_name == name
        assert getattr(kbert, model_class(name).__name__) is model_class(name)


def test_import_kbert_in_a_program_registers_every_class_with_keras(tmp_path):
    """`import kbert; keras.saving.load_model(...)` finds kbert's classes (the
    `kbert` command alone imports them on first use)."""
    import os
    import subprocess
    import sys

    from tests.test_case import tiny_backbone

    path = str(tmp_path / "classifier.keras")
    kbert.BertClassifier(tiny_backbone(), num_classes=2).save(path)
    program = (
        "import kbert, keras\n"
        f"model = keras.saving.load_model({path!r})\n"
        "print(type(model).__name__)\n"
    )
    root = os.path.dirname(os.path.dirname(kbert.__file__))
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("BertClassifier")
