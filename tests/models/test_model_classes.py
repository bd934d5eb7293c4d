"""`kbert.models`: the task names the command line offers are the classes' own."""

import kbert
from kbert.models import MODEL_CLASSES, model_class, task_names


def test_task_names_are_the_classes_task_names_in_detection_order():
    assert task_names() == tuple(cls.task_name for cls in MODEL_CLASSES)
    for name in task_names():
        assert model_class(name).task_name == name
        assert getattr(kbert, model_class(name).__name__) is model_class(name)
