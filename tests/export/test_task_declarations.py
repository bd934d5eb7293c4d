"""What every exportable model class declares for the exporters
(`kbert.models.preset_io.PresetMixin`) matches what the model computes.

`kbert/export` reads these declarations instead of branching on task names,
so a wrong one would name the wrong ONNX axes, score agreement on the wrong
output or write a MediaPipe file with outputs its task cannot read.
"""

import numpy as np
import pytest

from kbert.export.agreement import prediction_scores
from kbert.export.spec import export_spec, keras_outputs
from kbert.models import model_classes
from tests.export.export_helpers import tiny_model
from tests.test_case import token_inputs

LENGTH, POSITIONS = 7, 5  # unlike every other dimension of the tiny models
ARGUMENTS = {
    "BertClassifier": {"num_classes": 3},
    "BertTokenClassifier": {"num_classes": 3},
    "BertMultipleChoice": {"num_choices": 2},
}
AGREEMENTS = (None, "argmax", "argmax_per_token", "label_set", "span", "cosine")
MEDIAPIPE_TASKS = ("TextClassifier", "BertQuestionAnswerer", "TextEmbedder")


def exportable_models():
    models = []
    for cls in model_classes():
        if cls.__name__ == "BertBackbone":
            models.append(tiny_model("BertClassifier", num_classes=3).backbone)
            continue
        model = tiny_model(cls.__name__, **ARGUMENTS.get(cls.__name__, {}))
        try:
            export_spec(model)
        except ValueError:  # not exportable (the pretrainer): declares nothing
            assert not model.per_token_outputs and model.agreement is None
            continue
        models.append(model)
    return models


@pytest.fixture(scope="module")
def models():
    return exportable_models()


def _inputs(model, spec):
    inputs = token_inputs(
        batch=2, length=LENGTH, extra_dims=spec.extra_dims, vocabulary_size=40
    )
    if "mask_positions" in spec.token_inputs:
        inputs["mask_positions"] = np.tile(np.arange(1, 1 + POSITIONS), (2, 1))
    return inputs


def test_every_exportable_class_is_checked(models):
    names = {type(model).__name__ for model in models}
    assert names == {
        "BertBackbone",
        "BertMaskedLM",
        "BertClassifier",
        "BertTokenClassifier",
        "BertQuestionAnswerer",
        "BertMultipleChoice",
        "BertTextEmbedder",
    }


def test_per_token_declarations_name_the_outputs_with_those_axes(models):
    for model in models:
        spec = export_spec(model)
        outputs = keras_outputs(model, _inputs(model, spec))
        axis = 1 + len(spec.extra_dims)
        assert set(spec.sequence_outputs) | set(spec.position_outputs) <= set(outputs)
        for name, value in outputs.items():
            has_sequence = value.ndim > axis and value.shape[axis] == LENGTH
            assert has_sequence == (name in spec.sequence_outputs), (spec.task, name)
            has_positions = value.ndim > 1 and value.shape[1] == POSITIONS
            assert has_positions == (name in spec.position_outputs), (spec.task, name)
        if spec.sequence_outputs:
            assert getattr(model, "output_sequence_axis", 1) == 1


def test_agreement_declarations_score_what_the_model_predicts(models):
    """Self-agreement is 1; outputs changed where the declaration says the
    prediction is read score below 1."""
    for model in models:
        spec = export_spec(model)
        assert spec.agreement in AGREEMENTS, spec.task
        inputs = _inputs(model, spec)
        want = keras_outputs(model, inputs)
        scores, kind = prediction_scores(spec, want, want, inputs)
        assert kind == ("cosine" if spec.agreement == "cosine" else "argmax")
        np.testing.assert_allclose(scores, 1.0, rtol=1e-6)
        flipped = {name: -value for name, value in want.items()}
        scores, _ = prediction_scores(spec, flipped, want, inputs)
        assert np.mean(scores) < 0.9, spec.task


def test_mediapipe_declarations_map_existing_outputs(models):
    declared = set()
    for model in models:
        spec = export_spec(model)
        if spec.mediapipe_task is None:
            assert spec.mediapipe_outputs == (), spec.task
            continue
        assert spec.mediapipe_task in MEDIAPIPE_TASKS
        assert {ours for ours, _ in spec.mediapipe_outputs} <= set(spec.output_names)
        declared.add(spec.mediapipe_task)
    assert declared == set(MEDIAPIPE_TASKS)
