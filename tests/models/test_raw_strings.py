"""Tasks with a preprocessor attached train, evaluate and predict on raw strings."""

import numpy as np
import pytest

import kbert
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from tests.test_case import tiny_backbone

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
    x = PAIRS if pair else TEXTS
    # Plain Python lists of labels work as well as arrays.
    history = model.fit(x, y.tolist(), batch_size=8, validation_data=(x, y), verbose=0)
    assert np.isfinite(history.history["val_loss"]).all()
    assert np.isfinite(model.evaluate(x, y, batch_size=8, verbose=0)).all()
    logits = model.predict(x, batch_size=8, verbose=0)
    assert logits.shape == (len(TEXTS), num_classes)
    # The same ids through the model directly give the same logits.
    token_inputs = preprocessor(x)
    direct = model.predict({k: np.asarray(v) for k, v in token_inputs.items()}, verbose=0)
    np.testing.assert_allclose(logits, direct, atol=1e-5)
