"""Tasks with a preprocessor attached train, evaluate and predict on raw strings."""

import numpy as np
import pytest

import kbert
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from tests.test_case import randomized, tiny_backbone

pytestmark = pytest.mark.eager_on_tensorflow  # tests/conftest.py

WORDS = "good great fun bad dull awful movie plot the a was very not".split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TEXTS = ["good fun movie", "dull awful plot", "the plot was great", "a very bad movie"] * 4
PAIRS = (TEXTS, TEXTS[1:] + TEXTS[:1])

LABELS = {
    "single_label": (2, np.array([1, 0, 1, 0] * 4)),
    "multi_label": (
        3,
        np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]] * 4, "float32"),
    ),
    "regression": (1, np.array([[0.9], [0.1], [0.8], [0.2]] * 4, "float32")),
}


def classifier_loss(problem_type, logits, y):
    """The classifier's default loss, from its outputs and the labels, in NumPy."""
    logits, y = np.asarray(logits, "float64"), np.asarray(y)
    if problem_type == "single_label":
        shifted = logits - logits.max(-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        return -np.mean(log_p[np.arange(len(y)), y])
    if problem_type == "multi_label":  # binary cross-entropy of the logits
        return np.mean(np.maximum(logits, 0) - logits * y + np.log1p(np.exp(-abs(logits))))
    return np.mean((logits - y) ** 2)


@pytest.mark.parametrize(
    "problem_type, pair",
    [("single_label", False), ("multi_label", True), ("regression", True)],
)
def test_classifier_on_raw_strings(problem_type, pair):
    num_classes, y = LABELS[problem_type]
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    model = kbert.BertClassifier(
        tiny_backbone(vocabulary_size=len(VOCABULARY)),
        num_classes=num_classes,
        problem_type=problem_type,
        preprocessor=preprocessor,
    )
    # Random weights everywhere: outputs that differ from text to text (a new
    # head's are near zero, so any labels would score about the same loss).
    randomized(model)
    x = PAIRS if pair else TEXTS
    # Plain Python lists of labels work as well as arrays.
    history = model.fit(x, y.tolist(), batch_size=8, validation_data=(x, y), verbose=0)
    logits = model.predict(x, batch_size=8, verbose=0)
    assert logits.shape == (len(TEXTS), num_classes)
    # evaluate, and fit's validation after its last epoch, score these
    # outputs of the trained model against these labels.
    want = classifier_loss(problem_type, logits, y)
    scores = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    np.testing.assert_allclose(scores["loss"], want, rtol=1e-5)
    np.testing.assert_allclose(history.history["val_loss"][-1], want, rtol=1e-5)
    # The same ids through the model directly give the same logits.
    token_inputs = preprocessor(x)
    direct = model.predict({k: np.asarray(v) for k, v in token_inputs.items()}, verbose=0)
    np.testing.assert_allclose(logits, direct, atol=1e-5)
