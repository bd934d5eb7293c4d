"""Exporters: SavedModel (TF Serving), TFLite (Android), ONNX, OpenVINO IR; all verified.

Every exporter runs its artifact on the artifact's own runtime against the
Keras model, on real sentences, before renaming it into place; a failed
export leaves nothing at the target path.

`saved_model(model, path)`, `tflite(model, path, flavour=...)`,
`onnx(model, path, quantization=...)` and `openvino(model, path)` each
return the artifact's export record. A quantized artifact is also checked
by prediction agreement on held-out reviews (`kbert.export.agreement`).

Example (`onnx_file` was written by `kbert.export.onnx(classifier, path)`):
>>> from kbert.export.record import read_record
>>> record = read_record(onnx_file)  # the record the exporter returned, kept in the file
>>> record["outputs"], record["verification"]["runtime"]
(['logits', 'probabilities'], 'onnxruntime ... (CPU)')
"""

from kbert.utils.lazy import lazy_package

__all__ = ["ExportVerificationError", "onnx", "openvino", "saved_model", "tflite"]

# Imported on first use: `kbert export --help` loads no exporter.
lazy_package(
    __name__,
    {
        "kbert.export.checks": ["ExportVerificationError"],
        "kbert.export.onnx.exporter": ["onnx"],
        "kbert.export.openvino.exporter": ["openvino"],
        "kbert.export.saved_model.exporter": ["saved_model"],
        "kbert.export.tflite.exporter": ["tflite"],
    },
)
