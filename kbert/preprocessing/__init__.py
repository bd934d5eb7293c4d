"""Text to BERT inputs, with TensorFlow ops (tf.data on every backend)."""

from kbert.preprocessing.hf_tokenizer_files import (
    read_tokenizer_files,
    write_tokenizer_files,
)
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from kbert.preprocessing.vocabulary import load_vocabulary, train_vocabulary

__all__ = [
    "BertPreprocessor",
    "BertTokenizer",
    "load_vocabulary",
    "read_tokenizer_files",
    "train_vocabulary",
    "write_tokenizer_files",
]
