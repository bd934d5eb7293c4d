"""Exporters: SavedModel (TF Serving), TFLite (Android), ONNX, OpenVINO IR; all verified.

Every exporter runs its artifact on the artifact's own runtime against the
Keras model, on real sentences, before renaming it into place; a failed
export leaves nothing at the target path.

`saved_model(model, path)`, `tflite(model, path, flavour=...)`,
`onnx(model, path, quantization=...)` and `openvino(model, path)` each
return the artifact's export record; `auto(model, directory)` writes the
candidate that runs fastest within its bounds on this CPU. A quantized
artifact is also checked by prediction agreement on held-out reviews
(`kbert.export.agreement`).
Each format lives in its folder (`kbert/export/<format>/`: exporter,
runner, helpers) and has one row in `kbert.export.formats.EXPORTERS`, the
table the command line, the records and `kbert verify` read.

Example (`onnx_file` was written by `kbert.export.onnx(classifier, path)`):
>>> from kbert.export.record import read_record
>>> record = read_record(onnx_file)  # the record the exporter returned, kept in the file
>>> record["outputs"], record["verification"]["runtime"]
(['logits', 'probabilities'], 'onnxruntime ... (CPU)')
"""

from kbert.export.formats import EXPORTERS
from kbert.utils.lazy import lazy_package

__all__ = sorted(
    ["ExportVerificationError", "auto", *(exporter.name for exporter in EXPORTERS)]
)

# Imported on first use: `kbert export --help` loads no exporter. Each
# format's function `kbert.export.<name>` is its row's `export`.
_homes = {
    "kbert.export.checks": ["ExportVerificationError"],
    "kbert.export.auto_export": ["auto"],
}
for _exporter in EXPORTERS:
    _homes.setdefault(_exporter.export.partition(":")[0], []).append(_exporter.name)
lazy_package(__name__, _homes)
