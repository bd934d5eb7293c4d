"""Exporters: SavedModel (TF Serving), TFLite (Android) and ONNX, each verified.

Every exporter runs its artifact on the artifact's own runtime against the
Keras model, on real sentences, before renaming it into place; a failed
export leaves nothing at the target path.

`saved_model(model, path)`, `tflite(model, path, flavour=...)` and
`onnx(model, path)` each return the artifact's export record.

Example:
>>> record = kbert.export.onnx(classifier, "out/classifier.onnx")
>>> record["outputs"], record["verification"]["runtime"]
(['logits', 'probabilities'], 'onnxruntime ... (CPU)')
"""

from kbert.export.checks import ExportVerificationError
from kbert.export.onnx import onnx
from kbert.export.saved_model import saved_model
from kbert.export.tflite import tflite

__all__ = ["ExportVerificationError", "onnx", "saved_model", "tflite"]
