"""Exporters: SavedModel (TF Serving), TFLite (Android) and ONNX, each verified.

Every exporter runs its artifact on the artifact's own runtime against the
Keras model, on real sentences, before renaming it into place; a failed
export leaves nothing at the target path.

Example:
>>> kbert.export.saved_model(classifier, "out/classifier/1")
>>> kbert.export.tflite(classifier, "out/classifier.tflite", flavour="string")
>>> kbert.export.onnx(classifier, "out/classifier.onnx")
"""

from kbert.export.checks import ExportVerificationError
from kbert.export.onnx import onnx
from kbert.export.saved_model import saved_model
from kbert.export.tflite import tflite

__all__ = ["ExportVerificationError", "onnx", "saved_model", "tflite"]
