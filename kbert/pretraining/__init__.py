"""BERT pretraining: data creation, masking, TFRecords, the fit loop, scaling.

TensorFlow is imported only when data is created or read (inside functions).
"""

from kbert.optimization.optimizers import bert_optimizer
from kbert.optimization.schedules import WarmupLinearDecay
from kbert.pretraining.checkpointing import (
    StopOnNaN,
    TrainingCheckpoint,
    TrainingDivergedError,
)
from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import pretraining_dataset
from kbert.pretraining.distribution import (
    bert_layout_map,
    data_parallel,
    mirrored_strategy,
    model_parallel,
)
from kbert.pretraining.documents import (
    documents_from_texts,
    read_documents,
    split_sentences,
)
from kbert.pretraining.masking import MaskedLMMasker
from kbert.pretraining.training import MetricsLogger, pretrain

__all__ = [
    "MaskedLMMasker",
    "MetricsLogger",
    "StopOnNaN",
    "TrainingCheckpoint",
    "TrainingDivergedError",
    "WarmupLinearDecay",
    "bert_layout_map",
    "create_pretraining_data",
    "data_parallel",
    "documents_from_texts",
    "mirrored_strategy",
    "model_parallel",
    "pretrain",
    "pretraining_dataset",
    "bert_optimizer",
    "read_documents",
    "split_sentences",
]
