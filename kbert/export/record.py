"""The export record: what an artifact is, stored inside the artifact.

Each exporter builds a small JSON record (`build_record`: task, inputs,
outputs, source model, the verification it passed, format details) and
stores it where its format keeps extra data (`write_with_record`), so that
`kbert verify ARTIFACT` knows how to run it. Where that is, is the format's
row of `kbert.export.formats.EXPORTERS`:

- SavedModel: `assets.extra/kbert_export.json` (TF Serving ignores that
  directory; it is where its warm-up requests live too);
- TFLite: a `kbert_export` entry of the flatbuffer's `metadata` list;
- ONNX: the `kbert_export` key of the model's `metadata_props`;
- OpenVINO IR: `kbert_export.json` beside `openvino_model.xml`.
"""

import json
import os

import keras

from kbert.export.checks import check_close
from kbert.export.formats import (
    EXPORTERS,
    RECORD_NAME,
    exporter_named,
    load,
)


def artifact_format(path):
    """`"saved_model"`, `"openvino"`, `"tflite"` or `"onnx"`, judged from the path.

    Example:
    >>> artifact_format("out/model.onnx")
    'onnx'
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        markers = [exporter.marker for exporter in EXPORTERS if exporter.marker]
        for exporter in EXPORTERS:
            if exporter.marker and os.path.isfile(os.path.join(path, exporter.marker)):
                return exporter.name
        raise ValueError(f"{path} is a directory without {' or '.join(markers)}.")
    for exporter in EXPORTERS:
        if exporter.suffix and path.endswith(exporter.suffix):
            return exporter.name
    raise ValueError(
        f"{path}: not an export artifact (a SavedModel directory, a .tflite or "
        "an .onnx file)."
    )


def _record_file(directory, exporter):
    return os.path.join(directory, *exporter.record_file.split("/"))


def build_record(kind, model, spec, source, verification, **details):
    """The export record of an artifact of format `kind` made from `model`.

    `details` are the format's own entries (flavour, opset, signatures...);
    `outputs` defaults to the spec's output names.

    Example:
    >>> record = build_record("onnx", classifier, spec, None, {"tolerance": 1e-4}, opset=18)
    >>> record["task"], record["outputs"], record["opset"]
    ('classifier', ['logits', 'probabilities'], 18)
    """
    return {
        "format": kind,
        "task": spec.task,
        "class_name": type(model).__name__,
        "source": os.path.abspath(source) if source else None,
        "outputs": list(spec.output_names),
        "labels": list(spec.labels),
        "backend": keras.backend.backend(),
        **details,
        "verification": verification,
    }


def write_with_record(path, kind, export_record, probe=None):
    """Stores `export_record` in the verified artifact at `path`.

    A file artifact (TFLite, ONNX) is rewritten: it is run on `probe` (a dict
    of inputs) before and after, on its format's runner, and its outputs must
    not change.

    Example:
    >>> import shutil
    >>> _ = shutil.copy(onnx_file, "c.onnx")
    >>> record = build_record("onnx", classifier, spec, None, {"note": "re-measured"})
    >>> write_with_record("c.onnx", "onnx", record, probe=token_inputs)
    >>> read_record("c.onnx")["verification"]
    {'note': 're-measured'}
    """
    exporter = exporter_named(kind)
    if exporter.record_file:
        file = _record_file(path, exporter)
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "w", encoding="utf-8") as handle:
            json.dump(export_record, handle, indent=2, sort_keys=True)
        return
    runner = load(exporter.runner)
    before = runner(path)(probe)
    with open(path, "rb") as handle:
        data = handle.read()
    text = json.dumps(export_record, sort_keys=True)
    data = load(exporter.embed_record)(data, RECORD_NAME, text)
    with open(path, "wb") as handle:
        handle.write(data)
    after = runner(path)(probe)
    check_close(after, before, 0.0, f"The {kind} artifact after adding its export record")


def read_record(path):
    """The export record stored in an artifact, or `{}` when it has none.

    Example:
    >>> read_record(onnx_file)["task"], read_record(tflite_file)["flavour"]
    ('classifier', 'token_ids')
    """
    exporter = exporter_named(artifact_format(path))
    if exporter.record_file:
        file = _record_file(path, exporter)
        if not os.path.isfile(file):
            return {}
        with open(file, encoding="utf-8") as handle:
            return json.load(handle)
    text = load(exporter.read_embedded)(path, RECORD_NAME)
    return json.loads(text) if text else {}
