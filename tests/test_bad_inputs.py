"""Bad inputs get a clear `ValueError` naming the problem, before Keras sees them."""

import keras
import numpy as np
import pytest

import kbert
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from tests.test_case import tiny_backbone, token_inputs

VOCABULARY_SIZE = 64  # tiny_backbone's

# (input name, bad value, message fragment naming the table)
OUT_OF_RANGE = [
    ("token_ids", VOCABULARY_SIZE, "vocabulary_size=64"),
    ("token_ids", -1, "vocabulary_size=64"),
    ("segment_ids", 2, "num_segments=2"),
    ("segment_ids", -3, "num_segments=2"),
]


def bad_inputs(name, value, row=1, token=4):
    inputs = token_inputs(batch=3, length=10)
    inputs["padding_mask"][:] = 1
    inputs[name][row, token] = value
    return inputs


def assert_names(error, name, value, position="row 1, token 4", entry=""):
    message = f"{entry}: {error.value}"
    assert f"'{name}'" in message, message
    assert f"id {value} " in message, message
    assert position in message, message


@pytest.mark.parametrize("name, value, table", OUT_OF_RANGE)
def test_backbone_call_refuses_out_of_range_ids(name, value, table):
    backbone = tiny_backbone()
    inputs = bad_inputs(name, value)
    with pytest.raises(ValueError, match=table) as error:
        backbone(inputs)
    assert_names(error, name, value)
    # Concrete backend tensors are checked as NumPy arrays are.
    tensors = {k: keras.ops.convert_to_tensor(v) for k, v in inputs.items()}
    with pytest.raises(ValueError, match=table):
        backbone(tensors)
    with pytest.raises(ValueError, match=table) as error:
        backbone.predict(inputs, verbose=0)
    assert_names(error, name, value)
    # Good ids still run.
    good = token_inputs(batch=3, length=10)
    assert backbone(good)["sequence_output"].shape == (3, 10, 16)


@pytest.mark.parametrize("name, value, table", OUT_OF_RANGE[::3])
def test_task_entry_points_refuse_out_of_range_ids(name, value, table):
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2)
    inputs = bad_inputs(name, value)
    y = np.array([0, 1, 0])
    calls = {
        "__call__": lambda: model(inputs),
        "predict": lambda: model.predict(inputs, verbose=0),
        "evaluate": lambda: model.evaluate(inputs, y, verbose=0),
        "fit": lambda: model.fit(inputs, y, epochs=1, verbose=0),
        "fit validation_data": lambda: model.fit(
            token_inputs(batch=3, length=10), y, validation_data=(inputs, y), verbose=0
        ),
        "predict_features": lambda: model.predict_features(inputs),
    }
    for entry, call in calls.items():
        with pytest.raises(ValueError, match=table) as error:
            call()
        assert_names(error, name, value, entry=entry)
    # After every refusal the model still predicts (no broken state on JAX).
    logits = model.predict(token_inputs(batch=3, length=10), verbose=0)
    assert logits.shape == (3, 2) and np.isfinite(logits).all()


def test_multiple_choice_position_names_every_axis():
    model = kbert.BertMultipleChoice(tiny_backbone(), num_choices=2)
    inputs = token_inputs(batch=2, length=6, extra_dims=(2,))
    inputs["padding_mask"][:] = 1
    inputs["token_ids"][1, 0, 3] = 99
    with pytest.raises(ValueError, match="vocabulary_size") as error:
        model.predict(inputs, verbose=0)
    assert_names(error, "token_ids", 99, position="row 1, index 0, token 3")


def test_raw_text_with_a_larger_preprocessor_vocabulary_is_refused():
    # A preprocessor whose vocabulary outgrows the backbone's embedding table.
    words = [f"w{i}" for i in range(70)]
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary), sequence_length=8)
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2, preprocessor=preprocessor)
    assert model.predict(["w1 w2"], verbose=0).shape == (1, 2)
    with pytest.raises(
        ValueError, match="'token_ids' holds id 74 at position \\(row 1, token 1\\)"
    ):
        model.predict(["w1 w2", "w69"], verbose=0)
