"""Keras' `model.export` on kbert models: kbert's verified artifacts, run on
their runtimes against the Keras model in the same test."""

import keras
import numpy as np
import pytest

import kbert
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.saved_model.runner import run_saved_model
from kbert.export.tflite.runner import TFLiteRunner
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


# Every format Keras names, on every backend (issue 21): natively on
# TensorFlow; from JAX and PyTorch, ONNX (and the OpenVINO IR made from it)
# natively, SavedModel and LiteRT through kbert's TensorFlow subprocess.
FORMATS = ("tf_saved_model", "litert", "onnx", "openvino")


def _check_saved_model(classifier, path, expected, features):
    record = classifier.export(path, format="tf_saved_model")
    assert record["signatures"]["serving_default"] == ["text"]
    (outputs,), _, _ = run_saved_model(
        path, [("serving_default", {"text": np.array(TEXTS)})]
    )
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)


def _check_litert(classifier, path, expected, features):
    path = path.with_suffix(".tflite")
    assert classifier.export(path, format="litert")["flavour"] == "string"
    runner = TFLiteRunner(path)
    for text, row in zip(TEXTS, expected):
        np.testing.assert_allclose(runner({"text": [text]})["logits"][0], row, atol=1e-4)


def _check_onnx(classifier, path, expected, features):
    path = path.with_suffix(".onnx")
    # tf2onnx and torch take 17; jax2onnx's graphs need 18 (ReduceMean's axes input).
    opset = 18 if keras.backend.backend() == "jax" else 17
    record = classifier.export(path, format="onnx", opset_version=opset)
    assert record["opset"] == opset  # Keras' argument reaches kbert's exporter
    np.testing.assert_allclose(OnnxRunner(path)(features)["logits"], expected, atol=1e-4)


def _check_openvino(classifier, path, expected, features):
    classifier.export(path, format="openvino")
    runner = OpenVinoRunner(path / "openvino_model.xml", precision="f32")
    np.testing.assert_allclose(runner(features)["logits"], expected, atol=1e-4)


CHECKS = {
    "tf_saved_model": _check_saved_model,
    "litert": _check_litert,
    "onnx": _check_onnx,
    "openvino": _check_openvino,
}


@pytest.mark.parametrize("format", FORMATS)
def test_keras_formats_write_kbert_verified_artifacts(classifier, tmp_path, format):
    expected = classifier.predict(TEXTS, verbose=0)
    features = classifier.preprocessor(TEXTS)
    features = {name: np.asarray(value) for name, value in features.items()}
    CHECKS[format](classifier, tmp_path / "model", expected, features)


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


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="jax2onnx's opset floor")
def test_an_opset_jax2onnx_cannot_write_is_refused_before_any_work(classifier, tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(ValueError, match="opset 17 cannot be written from the JAX backend"):
        classifier.export(path, format="onnx", opset_version=17)
    assert not path.exists()
