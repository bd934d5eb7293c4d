"""The kbert task classes by name, as the command line and converters use them."""

from kbert.models.backbone import BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier

TASK_CLASSES = {
    "backbone": BertBackbone,
    "masked_lm": BertMaskedLM,
    "pretrainer": BertPretrainer,
    "classifier": BertClassifier,
    "token_classifier": BertTokenClassifier,
    "question_answerer": BertQuestionAnswerer,
    "multiple_choice": BertMultipleChoice,
    "text_embedder": BertTextEmbedder,
}
# The classes whose outputs depend on the pooler (`pooled_output`).
POOLER_USERS = (BertBackbone, BertPretrainer, BertClassifier, BertMultipleChoice)


def base_class(cls):
    """The kbert class (in `TASK_CLASSES`) that `cls` is or derives from.

    Example:
    >>> base_class(kbert.BertClassifier) is kbert.BertClassifier
    True
    """
    for klass in cls.__mro__:
        if klass in TASK_CLASSES.values():
            return klass
    raise ValueError(
        f"{cls.__name__} is not a kbert model class; expected one of "
        f"{[klass.__name__ for klass in TASK_CLASSES.values()]}."
    )


def task_name(cls):
    """The command-line task name of a model class.

    Example:
    >>> task_name(kbert.BertMaskedLM)
    'masked_lm'
    """
    klass = base_class(cls)
    return next(name for name, value in TASK_CLASSES.items() if value is klass)


def detect_task(directory):
    """The task name a checkpoint directory holds, judged from its files.

    kbert presets say it in `task.json`; HF directories in `architectures`
    (sentence-transformers ones are text embedders); Google checkpoints by
    their heads.

    Example:
    >>> detect_task("all-MiniLM-L6-v2")
    'text_embedder'
    """
    import json
    import os

    def read(name):
        with open(os.path.join(directory, name), encoding="utf-8") as file:
            return json.load(file)

    if os.path.isfile(os.path.join(directory, "backbone.json")):
        if not os.path.isfile(os.path.join(directory, "task.json")):
            return "backbone"
        class_name = read("task.json")["class_name"]
        return next(
            (name for name, cls in TASK_CLASSES.items() if cls.__name__ == class_name),
            "backbone",
        )
    if os.path.isfile(os.path.join(directory, "config.json")):
        from kbert.presets.hf_weight_map import HF_TASKS
        from kbert.presets.sentence_transformers_files import is_sentence_transformers

        if is_sentence_transformers(directory):
            return "text_embedder"
        architecture = (read("config.json").get("architectures") or ["BertModel"])[0]
        return next(
            (
                task_name(cls)
                for cls, hf_task in HF_TASKS.items()
                if hf_task.architecture == architecture
            ),
            "backbone",
        )
    if os.path.isfile(os.path.join(directory, "bert_config.json")):
        from kbert.presets.google import google_task

        return google_task(directory)
    raise ValueError(f"{directory} holds no checkpoint kbert knows.")
