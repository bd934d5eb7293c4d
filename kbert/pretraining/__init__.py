"""BERT pretraining: data creation, masking, TFRecords, the fit loop, scaling.

TensorFlow is imported only when data is created or read (inside functions).
"""

from kbert.utils.lazy import lazy_package

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

# Imported on first use: `kbert pretrain --help` loads no Keras.
lazy_package(
    __name__,
    {
        "kbert.optimization.optimizers": ["bert_optimizer"],
        "kbert.optimization.schedules": ["WarmupLinearDecay"],
        "kbert.pretraining.checkpointing": [
            "StopOnNaN",
            "TrainingCheckpoint",
            "TrainingDivergedError",
        ],
        "kbert.pretraining.data_creation": ["create_pretraining_data"],
        "kbert.pretraining.dataset": ["pretraining_dataset"],
        "kbert.distributed.strategies": [
            "bert_layout_map",
            "data_parallel",
            "mirrored_strategy",
            "model_parallel",
        ],
        "kbert.pretraining.documents": [
            "documents_from_texts",
            "read_documents",
            "split_sentences",
        ],
        "kbert.pretraining.masking": ["MaskedLMMasker"],
        "kbert.pretraining.training": ["MetricsLogger", "pretrain"],
    },
)
