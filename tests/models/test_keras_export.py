"""Keras' `model.export` on kbert models: kbert's verified artifacts, run on
their runtimes against the Keras model in the same test."""

import numpy as np
import pytest

import kbert
from kbert.export.runtimes import OnnxRunner, OpenVinoRunner, TFLiteRunner, run_saved_model
from tests.conftest import VOCABULARY
from tests.test_case import randomized, tiny_backbone

TEXTS = ["good fun movie", "the plot was very dull and not great at all"]


@pytest.fixture(scope="module")
def classifier():
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer

    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    return randomized(kbert.BertClassifier(backbone, 2, preprocessor=preprocessor), 0, 0.1)


def test_every_keras_format_writes_kbert_verified_strings_in_artifacts(
    classifier, tmp_path
):
    expected = classifier.predict(TEXTS, verbose=0)
    features = classifier.preprocessor(TEXTS)
    features = {name: np.asarray(value) for name, value in features.items()}

    record = classifier.export(tmp_path / "saved_model", format="tf_saved_model")
    assert record["signatures"]["serving_default"] == ["text"]
    (outputs,), _, _ = run_saved_model(
        tmp_path / "saved_model", [("serving_default", {"text": np.array(TEXTS)})]
    )
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)

    record = classifier.export(tmp_path / "model.tflite", format="litert")
    assert record["flavour"] == "string"
    runner = TFLiteRunner(tmp_path / "model.tflite")
    for text, row in zip(TEXTS, expected):
        np.testing.assert_allclose(runner({"text": [text]})["logits"][0], row, atol=1e-4)

    classifier.export(tmp_path / "model.onnx", format="onnx", opset_version=17)
    onnx_logits = OnnxRunner(tmp_path / "model.onnx")(features)["logits"]
    np.testing.assert_allclose(onnx_logits, expected, atol=1e-4)

    classifier.export(tmp_path / "openvino", format="openvino")
    runner = OpenVinoRunner(tmp_path / "openvino" / "openvino_model.xml", precision="f32")
    np.testing.assert_allclose(runner(features)["logits"], expected, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(format="torch"), "torch.export"),
        (dict(format="keras"), "must be one of"),
        (dict(format="onnx", input_signature=[None]), "input_signature"),
        (dict(format="openvino", filepath_suffix=".xml"), "IR directory"),
    ],
)
def test_what_kbert_cannot_honour_is_refused_by_name(classifier, tmp_path, kwargs, message):
    path = tmp_path / ("model" + kwargs.pop("filepath_suffix", ""))
    with pytest.raises(ValueError, match=message):
        classifier.export(path, **kwargs)
    assert not path.exists()
