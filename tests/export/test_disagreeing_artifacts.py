"""Every exporter refuses an artifact that disagrees with the Keras model.

The ONNX exporter's own test converts another model's weights
(`tests/export/test_onnx.py`); here each other exporter's verification sees
Keras outputs shifted by 0.5, as a model changed between conversion and
check would give: the export must raise, naming the difference, and leave
neither the target nor a temporary file. On JAX and PyTorch the SavedModel
and TFLite files are written by a TensorFlow subprocess and refused by the
check against this backend's model: that path is the same for both, so
it runs in the PyTorch run, not again in the JAX run.
"""

import importlib
import os

import keras
import numpy as np
import pytest

import kbert
from tests.export.export_helpers import tiny_model

# exporter -> (target, the module whose `keras_outputs` its verification reads)
EXPORTERS = {
    "saved_model": ("saved_model", "kbert.export.saved_model.exporter"),
    "tflite": ("model.tflite", "kbert.export.tflite.verification"),
    "openvino": ("openvino", "kbert.export.openvino.exporter"),
}


@pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="the TensorFlow-subprocess path is PyTorch's too, and runs there",
)
@pytest.mark.parametrize("name", EXPORTERS)
def test_an_artifact_that_disagrees_is_refused_and_removed(name, tmp_path, monkeypatch):
    if name == "saved_model" and keras.backend.backend() == "torch":
        pytest.skip("the TensorFlow-subprocess check is the TFLite case's, run here")
    target, module_name = EXPORTERS[name]
    module = importlib.import_module(module_name)
    real = module.keras_outputs

    def shifted(model, inputs):
        return {k: np.asarray(v) + 0.5 for k, v in real(model, inputs).items()}

    monkeypatch.setattr(module, "keras_outputs", shifted)
    path = tmp_path / "out" / target
    with pytest.raises(kbert.export.ExportVerificationError, match="differ"):
        getattr(kbert.export, name)(tiny_model(num_classes=2), str(path))
    assert not path.exists()
    assert os.listdir(path.parent) == []
