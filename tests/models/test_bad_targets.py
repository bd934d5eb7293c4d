"""Bad training targets and diverged training: a clear error before (or as)
Keras trains, on every backend (issue 28, points 1 and 2)."""

import keras
import numpy as np
import pytest

import kbert
from kbert.models.divergence import TrainingDivergedError
from tests.export.export_helpers import tiny_model
from tests.test_case import tiny_backbone, token_inputs

pytestmark = pytest.mark.eager_on_tensorflow  # tests/conftest.py

TEXTS = ["a good film", "not very fun", "the plot", "a film", "very fun", "good"]


@pytest.fixture(scope="module")
def models():
    return {
        "single": tiny_model(num_classes=3),
        "multi": tiny_model(num_classes=3, problem_type="multi_label"),
        "regression": tiny_model(num_classes=1, problem_type="regression"),
        "ner": tiny_model("BertTokenClassifier", num_classes=3),
        "mc": tiny_model("BertMultipleChoice", num_choices=2),
        "qa": tiny_model("BertQuestionAnswerer"),
    }


def weights_of(model):
    return [np.array(v) for v in model.trainable_weights]


def refuses(call, *fragments):
    with pytest.raises(ValueError) as error:
        call()
    for fragment in fragments:
        assert fragment in str(error.value), str(error.value)
    return error


# (model, labels, message fragments): raw texts in, as a new user writes them.
RAW_CASES = {
    "label above num_classes": (
        "single",
        [0, 1, 5, 0, 1, 2],
        ["labels[2] is 5", "BertClassifier(num_classes=3) takes class ids 0..2"],
    ),
    "negative label": ("single", [0, 1, 2, -1, 1, 2], ["labels[3] is -1"]),
    "float label": ("single", [0, 1, 1.5, 0, 1, 2], ["labels[2] is 1.5", "whole number"]),
    "seven labels for six texts": (
        "single",
        [0, 1, 2, 0, 1, 2, 0],
        ["7 targets for 6 examples"],
    ),
    "string labels": ("single", ["pos", "neg"] * 3, ["labels[0] is 'pos'", "string"]),
    "one-hot labels": ("single", np.eye(3)[[0, 1, 2, 0, 1, 2]], ["one-hot"]),
    "multi-hot 2": (
        "multi",
        [[0, 1, 0], [1, 0, 0], [0, 2, 0], [0, 0, 1], [1, 1, 0], [0, 0, 0]],
        ["labels[2, 1] is 2", "multi-hot"],
    ),
    "multi-hot wrong width": ("multi", [[0, 1]] * 6, ["shape (6, 2)", "(6, 3)"]),
    "regression NaN": (
        "regression",
        [0.1, 0.2, float("nan"), 0.3, 0.4, 0.5],
        ["labels[2] is nan", "finite"],
    ),
    "regression inf": (
        "regression",
        [0.1, 0.2, 0.3, np.inf, 0.4, 0.5],
        ["labels[3] is inf"],
    ),
}


@pytest.mark.parametrize("entry", ["fit", "evaluate"])
@pytest.mark.parametrize("case", sorted(RAW_CASES))
def test_raw_text_targets_are_checked(models, case, entry):
    name, labels, fragments = RAW_CASES[case]
    model = models[name]
    before = weights_of(model)
    kwargs = {"epochs": 1} if entry == "fit" else {}
    refuses(lambda: getattr(model, entry)(TEXTS, labels, verbose=0, **kwargs), *fragments)
    for old, new in zip(before, weights_of(model)):
        np.testing.assert_array_equal(old, new)


def test_whole_float_labels_and_booleans_train(models):
    model = models["single"]
    model.fit(TEXTS, [0.0, 1.0, 2.0, 0.0, 1.0, 2.0], epochs=1, verbose=0)
    models["multi"].fit(TEXTS, np.eye(3, dtype=bool)[[0, 1, 2, 0, 1, 2]], verbose=0)


def test_array_targets_are_checked():
    model = kbert.BertClassifier(tiny_backbone(), num_classes=3)
    inputs = token_inputs(batch=4, length=8)
    refuses(
        lambda: model.fit(inputs, np.array([0, 1, 5, 0]), verbose=0),
        "labels[2] is 5",
        "0..2",
    )
    refuses(lambda: model.evaluate(inputs, np.array([0, 1, 2]), verbose=0), "3 targets")
    refuses(lambda: model.fit(inputs, None, verbose=0), "labels is None")
    refuses(
        lambda: model.fit(
            inputs,
            np.array([0, 1, 2, 0]),
            validation_data=(inputs, np.array([0, 9, 2, 0])),
            verbose=0,
        ),
        "labels[1] is 9",
    )
    model.fit(inputs, np.array([0, 1, 2, 0]), epochs=1, verbose=0)


def test_first_dataset_batch_is_checked(models):
    import tensorflow as tf

    raw = tf.data.Dataset.from_tensor_slices((TEXTS, [0, 1, 7, 0, 1, 2])).batch(3)
    refuses(lambda: models["single"].fit(raw, verbose=0), "labels[2] is 7")
    model = kbert.BertClassifier(tiny_backbone(), num_classes=3)
    inputs = token_inputs(batch=4, length=8)
    arrays = tf.data.Dataset.from_tensor_slices((inputs, [0, -2, 1, 0])).batch(4)
    refuses(lambda: model.evaluate(arrays, verbose=0), "labels[1] is -2")


class Batches(keras.utils.PyDataset):
    """A user's PyDataset of token-id batches and their labels."""

    def __init__(self, inputs, labels):
        super().__init__()
        self.inputs, self.labels = inputs, labels

    def __len__(self):
        return 1

    def __getitem__(self, index):
        return self.inputs, self.labels


def test_first_pydataset_batch_is_checked():
    model = kbert.BertClassifier(tiny_backbone(), num_classes=3)
    inputs = token_inputs(batch=4, length=8)
    bad, good = (
        Batches(inputs, np.array([0, 1, 5, 0])),
        Batches(inputs, np.array([0, 1, 2, 0])),
    )
    refuses(lambda: model.fit(bad, verbose=0), "labels[2] is 5")
    refuses(lambda: model.evaluate(bad, verbose=0), "labels[2] is 5")
    refuses(lambda: model.fit(good, validation_data=bad, verbose=0), "labels[2] is 5")
    model.fit(good, validation_data=good, epochs=1, verbose=0)


def test_no_samples_and_missing_targets_are_refused(models):
    model = models["single"]
    refuses(lambda: model.fit([], [], verbose=0), "no samples")
    refuses(lambda: model.evaluate([], [], verbose=0), "no samples")
    refuses(lambda: model.fit(TEXTS, verbose=0), "labels is None")


def test_token_labels_are_checked():
    model = kbert.BertTokenClassifier(tiny_backbone(), num_classes=3)
    inputs = token_inputs(batch=2, length=8)
    labels = np.full((2, 8), -100)
    labels[:, 0] = 1
    bad = labels.copy()
    bad[1, 3] = 4
    refuses(lambda: model.fit(inputs, bad, verbose=0), "labels[1, 3] is 4", "-100")
    refuses(lambda: model.fit(inputs, labels[:, :5], verbose=0), "shape (2, 5)", "(2, 8)")
    model.fit(inputs, labels, verbose=0)


def test_raw_word_labels_are_checked(models):
    model = models["ner"]
    refuses(
        lambda: model.fit(["a good film"], [[0, 1, 3]], verbose=0),
        "is 3",
        "BertTokenClassifier(num_classes=3)",
    )


def test_multiple_choice_and_qa_targets_are_checked(models):
    prompts, choices = ["the film", "a plot"], [["was good", "was bad"], ["fun", "not"]]
    refuses(
        lambda: models["mc"].fit((prompts, choices), [0, 2], verbose=0),
        "labels[1] is 2",
        "choice ids 0..1",
    )
    model = kbert.BertQuestionAnswerer(tiny_backbone())
    inputs = token_inputs(batch=2, length=8)
    labels = {"start_logits": np.array([1, 2]), "end_logits": np.array([3, 8])}
    refuses(
        lambda: model.fit(inputs, labels, verbose=0),
        "labels['end_logits'][1] is 8",
        "token positions 0..7",
    )
    # (start, end) as a sequence: Keras would pair it with the outputs in
    # sorted-name order, end first; refused, even when every value is valid.
    starts, ends = np.array([1, 2]), np.array([3, 4])
    for sequence in ((starts, ends), [starts, ends]):
        refuses(
            lambda sequence=sequence: model.fit(inputs, sequence, verbose=0),
            f"labels is a {type(sequence).__name__} of 2",
            "takes a dict keyed by its outputs ['end_logits', 'start_logits']",
        )


def test_masked_lm_targets_are_checked():
    model = kbert.BertMaskedLM(tiny_backbone())
    inputs = token_inputs(batch=2, length=8)
    inputs["mask_positions"] = np.array([[1, 2], [1, 3]], "int32")
    refuses(
        lambda: model.fit(inputs, np.array([[5, 64], [6, 7]]), verbose=0),
        "labels[0, 1] is 64",
        "token ids 0..63",
    )


# === Point 2: diverged training raises ===


@pytest.mark.parametrize("problem_type", ["single_label", "regression"])
def test_a_non_finite_loss_stops_fit_with_the_step(problem_type):
    num_classes = 1 if problem_type == "regression" else 2
    model = kbert.BertClassifier(
        tiny_backbone(), num_classes=num_classes, problem_type=problem_type
    )
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1e30))
    inputs = token_inputs(batch=4, length=8)
    labels = np.array([0, 1, 1, 0]) * (1e20 if problem_type == "regression" else 1)
    with pytest.raises(TrainingDivergedError, match=r"epoch 1, step \d+"):
        model.fit(inputs, labels, batch_size=1, epochs=3, verbose=0)


def test_the_guard_can_be_turned_off():
    model = kbert.BertClassifier(tiny_backbone(), num_classes=1, problem_type="regression")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1e30))
    inputs = token_inputs(batch=4, length=8)
    history = model.fit(
        inputs,
        np.array([1e20, 0, 1e20, 0]),
        batch_size=1,
        epochs=2,
        verbose=0,
        stop_on_nan=False,
    )
    assert not np.isfinite(history.history["loss"][-1])
