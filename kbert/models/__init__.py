"""The BERT backbone and the task models built on it.

Each class declares in its own file what converters, exporters and the
command line need to know about it (`kbert.models.preset_io.PresetMixin`).
`MODEL_CLASSES` lists the classes they offer by task name: a new head adds
its class (and its task name) to `_TASKS` here, and nowhere else outside its
own file.

The classes are imported on first use: `task_names()` answers without Keras
(the command line's `--task` choices, `kbert --help`).
"""

import importlib

from kbert.utils.lazy import lazy_package

# (task name, module, class), in detection order: of two classes that fit a
# checkpoint equally well (`BertModel`: backbone or text embedder), the first
# wins. Each task name is its class's `task_name` (tests/models check it).
_TASKS = (
    ("backbone", "kbert.models.backbone", "BertBackbone"),
    ("masked_lm", "kbert.models.masked_lm", "BertMaskedLM"),
    ("pretrainer", "kbert.models.pretrainer", "BertPretrainer"),
    ("classifier", "kbert.models.classifier", "BertClassifier"),
    ("token_classifier", "kbert.models.token_classifier", "BertTokenClassifier"),
    ("question_answerer", "kbert.models.question_answerer", "BertQuestionAnswerer"),
    ("multiple_choice", "kbert.models.multiple_choice", "BertMultipleChoice"),
    ("text_embedder", "kbert.models.text_embedder", "BertTextEmbedder"),
)


def task_names():
    """The task names of `MODEL_CLASSES` (`kbert convert --task` choices).

    Example:
    >>> task_names()[:3]
    ('backbone', 'masked_lm', 'pretrainer')
    """
    return tuple(name for name, _, _ in _TASKS)


def model_classes():
    """The model classes by task, in detection order (imports them).

    Example:
    >>> [cls.__name__ for cls in model_classes()][:2]
    ['BertBackbone', 'BertMaskedLM']
    """
    return tuple(
        getattr(importlib.import_module(module), name) for _, module, name in _TASKS
    )


def model_class(task_name):
    """The model class of a task name.

    Example:
    >>> model_class("classifier").__name__
    'BertClassifier'
    """
    for name, module, class_name in _TASKS:
        if name == task_name:
            return getattr(importlib.import_module(module), class_name)
    raise ValueError(f"Unknown task {task_name!r}; expected one of {list(task_names())}.")


lazy_package(
    __name__,
    {module: [name] for _, module, name in _TASKS},
    computed={"MODEL_CLASSES": model_classes},
)
