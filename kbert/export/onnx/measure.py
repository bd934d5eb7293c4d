"""A written ONNX file re-measured for `kbert verify`: on onnxruntime and, on
OpenVINO, at the precision it picks for this CPU and at float32."""

from kbert.export.onnx.runner import OnnxRunner
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.report import first_row, median_seconds


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and batch-1 latency of the ONNX file at `artifact` on `runtime`
    (see `kbert.export.formats.Exporter.measure`)."""
    result = run_token_ids(artifact, features, repeats, runtime)
    quantization = record.get("quantization")
    result["format"] = "onnx" + (f" {quantization}" if quantization else "")
    return result


def run_token_ids(path, features, repeats, runtime):
    """An ONNX file or OpenVINO IR run on token ids: on onnxruntime
    (`"onnxruntime"`) or OpenVINO at its default precision (`"openvino"`) or
    at float32 (`"openvino_f32"`)."""
    if runtime == "onnxruntime":
        runner, name = OnnxRunner(path), "onnxruntime (CPU)"
    else:
        forced = runtime == "openvino_f32"
        runner = OpenVinoRunner(path, precision="f32" if forced else None)
        name = runner.describe() + (" forced" if forced else " default")
    got = runner(features)
    seconds = median_seconds(lambda: runner(first_row(features)), repeats=repeats)
    return {"outputs": got, "features": features, "seconds": seconds, "runtime": name}
