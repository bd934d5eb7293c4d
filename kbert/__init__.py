"""kbert: BERT in Keras 3, one implementation on TensorFlow, JAX and PyTorch."""

from kbert import data, export
from kbert.inference.pipeline import pipeline
from kbert.layers.activations import gelu, gelu_approximate
from kbert.models.backbone import BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.feature_extractor import BertFeatureExtractor
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from kbert.preprocessing.vocabulary import train_vocabulary
from kbert.presets.hf_save import save_hf
from kbert.sources import list_presets
from kbert.tasks.bio import bio_to_spans

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
    "pipeline",
    "save_hf",
    "train_vocabulary",
    "data",
    "export",
]
