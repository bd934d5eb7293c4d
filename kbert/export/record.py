"""The export record: what an artifact is, stored inside the artifact.

Each exporter writes a small JSON record (task, flavour, inputs, outputs,
source model, the verification it passed) where its format keeps extra data,
so that `kbert verify ARTIFACT` knows how to run it:

- SavedModel: `assets.extra/kbert_export.json` (TF Serving ignores that
  directory; it is where its warm-up requests live too);
- TFLite: a `kbert_export` entry of the flatbuffer's `metadata` list;
- ONNX: the `kbert_export` key of the model's `metadata_props`;
- OpenVINO IR: `kbert_export.json` beside `openvino_model.xml`.
"""

import json
import os

RECORD_NAME = "kbert_export"
OPENVINO_XML = "openvino_model.xml"
SAVED_MODEL_RECORD = os.path.join("assets.extra", RECORD_NAME + ".json")


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


def write_saved_model_record(directory, record):
    path = os.path.join(directory, SAVED_MODEL_RECORD)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(record, file, indent=2, sort_keys=True)


def tflite_with_record(model_bytes, record):
    """The TFLite flatbuffer with `record` in its `metadata` list.

    Example:
    >>> write_saved_model_record("out/sm", {"task": "classifier"})
    """
    from kbert.export.tflite_flatbuffer import with_metadata

    data = json.dumps(record, sort_keys=True).encode("utf-8")
    return with_metadata(model_bytes, RECORD_NAME, data)


def read_record(path):
    """The export record stored in an artifact, or `{}` when it has none.

    Example:
    >>> read_record("out/model.onnx")["task"]
    'classifier'
    """
    kind = artifact_format(path)
    if kind == "saved_model":
        file = os.path.join(path, SAVED_MODEL_RECORD)
        if not os.path.isfile(file):
            return {}
        with open(file, encoding="utf-8") as handle:
            return json.load(handle)
    if kind == "openvino":
        file = os.path.join(path, RECORD_NAME + ".json")
        if not os.path.isfile(file):
            return {}
        with open(file, encoding="utf-8") as handle:
            return json.load(handle)
    if kind == "tflite":
        from kbert.export.tflite_flatbuffer import metadata_entries

        with open(path, "rb") as handle:
            entries = metadata_entries(handle.read())
        data = entries.get(RECORD_NAME)
        return json.loads(data.decode("utf-8")) if data else {}
    import onnx

    model = onnx.load(path, load_external_data=False)
    for prop in model.metadata_props:
        if prop.key == RECORD_NAME:
            return json.loads(prop.value)
    return {}
