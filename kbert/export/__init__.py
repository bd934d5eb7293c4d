"""Exporters: SavedModel (TF Serving), TFLite (Android), ONNX, OpenVINO IR; all verified.

Every exporter runs its artifact on the artifact's own runtime against the
Keras model, on real sentences, before renaming it into place; a failed
export leaves nothing at the target path.

Example:
>>> kbert.export.saved_model(classifier, "out/classifier/1")
>>> kbert.export.tflite(classifier, "out/classifier.tflite", flavour="string")
>>> kbert.export.onnx(classifier, "out/classifier.onnx", quantization="dynamic_int8")
>>> kbert.export.openvino(classifier, "out/classifier_openvino")
"""

from kbert.export.checks import ExportVerificationError
from kbert.export.onnx import onnx
from kbert.export.openvino import openvino
from kbert.export.saved_model import saved_model
from kbert.export.tflite import tflite
from kbert.export.verify import verify

__all__ = ["ExportVerificationError", "onnx", "openvino", "saved_model", "tflite", "verify"]
