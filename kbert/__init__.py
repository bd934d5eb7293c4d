"""kbert: BERT in Keras 3, one implementation on TensorFlow, JAX and PyTorch.

The names below are imported on first use when the `kbert` command starts,
so that `kbert --help` does not load Keras. In a program, `import kbert`
imports them at once: Keras then knows every kbert class by its registered
name, and `keras.saving.load_model("model.keras")` works after `import kbert`
alone.
"""

import os
import sys

from kbert.utils.lazy import lazy_package
from kbert.utils.quiet import quiet_library

# No TensorFlow/absl/CUDA lines from a library (KBERT_VERBOSE=1 shows them).
quiet_library()

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
    "SlowPrecisionWarning",
    "TruncationWarning",
    "bio_to_spans",
    "gelu",
    "gelu_approximate",
    "list_presets",
    "pipeline",
    "save_hf",
    "train_vocabulary",
    "data",
    "export",
]

lazy_package(
    __name__,
    {
        "kbert.inference.pipeline": ["pipeline"],
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
        "kbert.models.bio": ["bio_to_spans"],
        "kbert.utils.long_texts": ["TruncationWarning"],
        "kbert.utils.precision_speed": ["SlowPrecisionWarning"],
    },
    submodules=("data", "export"),
)


def _starting_the_command_line():
    """`kbert ...` (the console script) or `python -m kbert.cli`: while Python
    imports the package of a `-m` module, `sys.argv[0]` is still "-m"."""
    program = sys.argv[0] if sys.argv else ""
    return os.path.basename(program) == "kbert" or program == "-m"


if not _starting_the_command_line():
    for _name in __all__:
        getattr(sys.modules[__name__], _name)
