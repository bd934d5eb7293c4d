"""kbert: BERT in Keras 3, one implementation on TensorFlow, JAX and PyTorch.

The names below are imported on first use, so that `import kbert.cli` (and
`kbert --help`) does not load Keras.
"""

from kbert.utils.lazy import lazy_package

__version__ = "0.1.0"

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertFeatureExtractor",
    "BertMaskedLM",
    "BertMultipleChoice",
    "BertPreprocessor",
    "BertPretrainer",
    "BertQuestionAnswerer",
    "BertTextEmbedder",
    "BertTokenClassifier",
    "BertTokenizer",
    "bio_to_spans",
    "gelu",
    "gelu_approximate",
    "list_presets",
    "save_hf",
    "train_vocabulary",
    "data",
    "export",
]

lazy_package(
    __name__,
    {
        "kbert.layers.activations": ["gelu", "gelu_approximate"],
        "kbert.models.backbone": ["BertBackbone"],
        "kbert.models.classifier": ["BertClassifier"],
        "kbert.models.feature_extractor": ["BertFeatureExtractor"],
        "kbert.models.masked_lm": ["BertMaskedLM"],
        "kbert.models.multiple_choice": ["BertMultipleChoice"],
        "kbert.models.pretrainer": ["BertPretrainer"],
        "kbert.models.question_answerer": ["BertQuestionAnswerer"],
        "kbert.models.text_embedder": ["BertTextEmbedder"],
        "kbert.models.token_classifier": ["BertTokenClassifier"],
        "kbert.preprocessing.preprocessor": ["BertPreprocessor"],
        "kbert.preprocessing.tokenizer": ["BertTokenizer"],
        "kbert.preprocessing.vocabulary": ["train_vocabulary"],
        "kbert.presets.hf_save": ["save_hf"],
        "kbert.sources": ["list_presets"],
        "kbert.tasks.bio": ["bio_to_spans"],
    },
    submodules=("data", "export"),
)
