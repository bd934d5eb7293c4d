import keras
import pytest

import kbert
from tests.test_case import tiny_backbone

WORDS = "good great fun bad dull awful movie plot the a was very not".split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def tiny_preset(tmp_path_factory):
    """A kbert preset of a tiny random backbone with a real vocabulary."""
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer

    keras.utils.set_random_seed(1337)
    directory = tmp_path_factory.mktemp("tiny") / "preset"
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    kbert.BertTextEmbedder(backbone, preprocessor=preprocessor).save_to_preset(directory)
    return str(directory)
