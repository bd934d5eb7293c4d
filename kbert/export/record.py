"""The export record: what an artifact is, stored inside the artifact.

Each exporter builds a small JSON record (`build_record`: task, inputs,
outputs, source model, the verification it passed, format details) and
stores it where its format keeps extra data (`write_with_record`), so that
`kbert verify ARTIFACT` knows how to run it:

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
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.tflite.flatbuffer import metadata_entries, with_metadata
from kbert.export.tflite.runner import TFLiteRunner

RECORD_NAME = "kbert_export"
OPENVINO_XML = "openvino_model.xml"
SAVED_MODEL_RECORD = os.path.join("assets.extra", RECORD_NAME + ".json")
FORMATS = ("saved_model", "tflite", "onnx", "openvino")
# Directory artifacts keep their record as a JSON file inside.
RECORD_FILES = {"saved_model": SAVED_MODEL_RECORD, "openvino": RECORD_NAME + ".json"}
RUNNERS = {"tflite": TFLiteRunner, "onnx": OnnxRunner}


def artifact_format(path):
    """`"saved_model"`, `"openvino"`, `"tflite"` or `"onnx"`, judged from the path.

    Example:
    >>> artifact_format("out/model.onnx")
    'onnx'
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "saved_model.pb")):
            return "saved_model"
        if os.path.isfile(os.path.join(path, OPENVINO_XML)):
            return "openvino"
        raise ValueError(f"{path} is a directory without saved_model.pb or {OPENVINO_XML}.")
    if path.endswith(".tflite"):
        return "tflite"
    if path.endswith(".onnx"):
        return "onnx"
    raise ValueError(
        f"{path}: not an export artifact (a SavedModel directory, a .tflite or "
        "an .onnx file)."
    )


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

    A TFLite or ONNX file is rewritten: it is run on `probe` (a dict of
    inputs) before and after, and its outputs must not change.

    Example:
    >>> import shutil
    >>> _ = shutil.copy(onnx_file, "c.onnx")
    >>> record = build_record("onnx", classifier, spec, None, {"note": "re-measured"})
    >>> write_with_record("c.onnx", "onnx", record, probe=token_inputs)
    >>> read_record("c.onnx")["verification"]
    {'note': 're-measured'}
    """
    if kind in RECORD_FILES:
        file = os.path.join(path, RECORD_FILES[kind])
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "w", encoding="utf-8") as handle:
            json.dump(export_record, handle, indent=2, sort_keys=True)
        return
    before = RUNNERS[kind](path)(probe)
    with open(path, "rb") as handle:
        data = handle.read()
    text = json.dumps(export_record, sort_keys=True)
    if kind == "tflite":
        data = with_metadata(data, RECORD_NAME, text.encode("utf-8"))
    else:
        data = _onnx_with_metadata(data, RECORD_NAME, text)
    with open(path, "wb") as handle:
        handle.write(data)
    after = RUNNERS[kind](path)(probe)
    check_close(after, before, 0.0, f"The {kind} artifact after adding its export record")


def _onnx_with_metadata(data, key, value):
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    proto = onnx.load_from_string(data)
    entries = [p for p in proto.metadata_props if p.key != key]
    del proto.metadata_props[:]
    proto.metadata_props.extend(entries)
    entry = proto.metadata_props.add()
    entry.key, entry.value = key, value
    return proto.SerializeToString()


def read_record(path):
    """The export record stored in an artifact, or `{}` when it has none.

    Example:
    >>> read_record(onnx_file)["task"], read_record(tflite_file)["flavour"]
    ('classifier', 'token_ids')
    """
    kind = artifact_format(path)
    if kind in RECORD_FILES:
        file = os.path.join(path, RECORD_FILES[kind])
        if not os.path.isfile(file):
            return {}
        with open(file, encoding="utf-8") as handle:
            return json.load(handle)
    if kind == "tflite":
        with open(path, "rb") as handle:
            entries = metadata_entries(handle.read())
        data = entries.get(RECORD_NAME)
        return json.loads(data.decode("utf-8")) if data else {}
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    model = onnx.load(path, load_external_data=False)
    for prop in model.metadata_props:
        if prop.key == RECORD_NAME:
            return json.loads(prop.value)
    return {}
