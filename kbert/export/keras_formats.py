"""kbert's exporters behind Keras' `model.export(path, format=...)`.

Importing this module registers them with `kbert.models.keras_export`.

Example:
>>> import kbert.export.keras_formats
>>> sorted(kbert.models.keras_export._exporters)
['litert', 'onnx', 'openvino', 'tf_saved_model']
"""

from kbert.export.onnx.exporter import onnx
from kbert.export.openvino.exporter import openvino
from kbert.export.saved_model.exporter import saved_model
from kbert.export.tflite.exporter import tflite
from kbert.models.keras_export import use_keras_export_formats


def _said(verbose, record, path):
    if verbose:
        print(f"Exported and verified {record['format']} at {path}.")
    return record


def _saved_model(model, path, verbose=None, **kwargs):
    return _said(verbose, saved_model(model, path, **kwargs), path)


def _litert(model, path, verbose=None, **kwargs):
    kwargs.setdefault(
        "flavour", "string" if getattr(model, "preprocessor", None) else "token_ids"
    )
    return _said(verbose, tflite(model, path, **kwargs), path)


def _onnx(model, path, verbose=None, opset_version=None, **kwargs):
    if opset_version is not None:
        kwargs["opset"] = opset_version
    return _said(verbose, onnx(model, path, **kwargs), path)


def _openvino(model, path, verbose=None, **kwargs):
    if str(path).endswith(".xml"):
        raise ValueError(
            f"model.export({str(path)!r}, format='openvino'): kbert writes an OpenVINO "
            "IR directory (openvino_model.xml, .bin and its export record); pass a "
            "directory path."
        )
    return _said(verbose, openvino(model, path, **kwargs), path)


use_keras_export_formats(
    {
        "tf_saved_model": _saved_model,
        "litert": _litert,
        "onnx": _onnx,
        "openvino": _openvino,
    }
)
