"""Keras' `model.export(path, format=...)` on kbert models, through kbert's exporters.

Keras' own exporters trace the model's `call` once per backend and do not
know about strings in or verification; kbert's write the same formats with
the tokenizer inside where the format allows it and run every artifact on
its runtime before it appears at `path`. `model.export` therefore goes to
them (`kbert.export`, which sits above the models and registers itself
here on import, as `kbert.presets.formats` does for `from_preset`):

- `"tf_saved_model"` -> `kbert.export.saved_model` (string and token-id signatures)
- `"litert"` -> `kbert.export.tflite` (flavour `"string"` with a
  preprocessor, else `"token_ids"`)
- `"onnx"` -> `kbert.export.onnx` (`opset_version` is its `opset`)
- `"openvino"` -> `kbert.export.openvino` (a directory)

Keras arguments kbert cannot honour are refused by name: `input_signature`
(kbert's signatures are fixed: strings and token ids of any length) and the
`"torch"` format (no verified runtime for a `torch.export` program).

Example (`classifier.export("out/model.onnx", format="onnx")` writes and
verifies an ONNX file, as `kbert.export.onnx` does):
>>> classifier.export("out/model.pt2", format="torch")
Traceback (most recent call last):
...
ValueError: model.export(format='torch'): kbert has no verified runtime for ...
"""

import importlib

# The module that registers kbert's exporters on import.
_EXPORT_MODULE = "kbert.export.keras_formats"
_exporters = {}
REFUSED_FORMATS = {
    "torch": "kbert has no verified runtime for a torch.export program; use "
    "format='onnx' (onnxruntime) or 'tf_saved_model'."
}


def use_keras_export_formats(exporters):
    """`{format: export(model, path, verbose, **kwargs)}`; `kbert.export` calls this."""
    _exporters.update(exporters)


class KerasExportable:
    """`export` for kbert's backbone and task models (see the module)."""

    def export(
        self,
        filepath,
        format="tf_saved_model",
        verbose=None,
        input_signature=None,
        **kwargs,
    ):
        """Keras' `Model.export`, written and verified by `kbert.export` (see
        `kbert.models.keras_export`); returns the export record."""
        if not _exporters:
            importlib.import_module(_EXPORT_MODULE)
        if format in REFUSED_FORMATS:
            raise ValueError(f"model.export(format={format!r}): {REFUSED_FORMATS[format]}")
        if format not in _exporters:
            raise ValueError(
                f"model.export(format=...) must be one of {sorted(_exporters)}; "
                f"got {format!r}."
            )
        if input_signature is not None:
            raise ValueError(
                "model.export(input_signature=...) is not used by kbert: its artifacts "
                "take strings (with a preprocessor) and token ids of any batch and "
                "length. Leave it out."
            )
        return _exporters[format](self, filepath, verbose=verbose, **kwargs)
