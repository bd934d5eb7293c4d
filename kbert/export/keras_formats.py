"""kbert's exporters behind Keras' `model.export(path, format=...)`.

Importing this module registers them with `kbert.models.keras_export`: each
row of `kbert.export.formats.EXPORTERS` answers its `keras_name`.

Example:
>>> import kbert.export.keras_formats
>>> sorted(kbert.models.keras_export._exporters)
['litert', 'onnx', 'openvino', 'tf_saved_model']
"""

from kbert.export.formats import EXPORTERS, load
from kbert.models.keras_export import use_keras_export_formats


def _said(export):
    """`export` taking Keras' `verbose`: says what it wrote."""

    def keras_export(model, path, verbose=None, **kwargs):
        record = export(model, path, **kwargs)
        if verbose:
            print(f"Exported and verified {record['format']} at {path}.")
        return record

    return keras_export


use_keras_export_formats(
    {exporter.keras_name: _said(load(exporter.keras_export)) for exporter in EXPORTERS}
)
