"""A keras-hub BERT preset (keras-hub's `save_to_preset`) loads into kbert
with the same outputs."""

import numpy as np
import pytest

import kbert
from kbert.presets.formats import detect_task
from tests.test_case import randomized

TOLERANCE = 1e-5
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "fox", "##es", "jump", "##s", "over", "dog", "café", ".", ",",
]  # fmt: skip
TEXTS = ["The foxes jump over the dog.", "A café, a fox", "dog"]


@pytest.fixture(scope="module")
def keras_hub_classifier(tmp_path_factory):
    keras_hub = pytest.importorskip("keras_hub")
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
    )
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer, sequence_length=16
    )
    classifier = keras_hub.models.BertTextClassifier(
        backbone, num_classes=3, preprocessor=preprocessor
    )
    randomized(classifier)
    directory = str(tmp_path_factory.mktemp("keras_hub") / "classifier")
    classifier.save_to_preset(directory)
    return classifier, directory


def test_keras_hub_classifier_preset_loads(keras_hub_classifier):
    reference, directory = keras_hub_classifier
    assert detect_task(directory) == "classifier"
    classifier = kbert.BertClassifier.from_preset(directory)
    assert classifier.num_classes == 3 and classifier.preprocessor.sequence_length == 16
    expected_ids = np.asarray(reference.preprocessor(TEXTS)["token_ids"])
    actual_ids = np.asarray(classifier.preprocessor(TEXTS)["token_ids"])
    np.testing.assert_array_equal(actual_ids, expected_ids)
    expected = np.asarray(reference.predict(TEXTS, verbose=0))
    actual = classifier.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(actual, expected, atol=TOLERANCE, rtol=0)


def test_keras_hub_backbone_outputs(keras_hub_classifier):
    reference, directory = keras_hub_classifier
    backbone = kbert.BertBackbone.from_preset(directory)
    inputs = {k: np.asarray(v) for k, v in reference.preprocessor(TEXTS).items()}
    expected = reference.backbone.predict(inputs, verbose=0)
    actual = backbone.predict(inputs, verbose=0)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(actual[key], expected[key], atol=TOLERANCE, rtol=0)
    tokenizer = kbert.BertTokenizer.from_preset(directory)
    assert tokenizer.get_vocabulary() == VOCABULARY
    assert tokenizer.lowercase and tokenizer.strip_accents is False
