"""The BERT backbone and the task models built on it.

Each class declares in its own file what converters, exporters and the
command line need to know about it (`kbert.models.preset_io.PresetMixin`).
`MODEL_CLASSES` lists the classes they offer by task name: a new head adds
its class here, and nowhere else outside its own file.
"""

from kbert.models.backbone import BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier

# In detection order: of two classes that fit a checkpoint equally well
# (`BertModel`: backbone or text embedder), the first wins.
MODEL_CLASSES = (
    BertBackbone,
    BertMaskedLM,
    BertPretrainer,
    BertClassifier,
    BertTokenClassifier,
    BertQuestionAnswerer,
    BertMultipleChoice,
    BertTextEmbedder,
)


def task_names():
    """The task names of `MODEL_CLASSES` (`kbert convert --task` choices).

    Example:
    >>> task_names()[:3]
    ('backbone', 'masked_lm', 'pretrainer')
    """
    return tuple(cls.task_name for cls in MODEL_CLASSES)


def model_class(task_name):
    """The model class of a task name.

    Example:
    >>> model_class("classifier").__name__
    'BertClassifier'
    """
    for cls in MODEL_CLASSES:
        if cls.task_name == task_name:
            return cls
    raise ValueError(f"Unknown task {task_name!r}; expected one of {list(task_names())}.")
