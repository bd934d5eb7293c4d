"""A written ONNX file re-measured for `kbert verify`: on onnxruntime and, on
OpenVINO, at the precision it picks for this CPU and at float32; with the
bound its exporter verified it with (`token_id_bound`). A `"string"` file
(tokenizer in the graph) runs on onnxruntime with onnxruntime-extensions, fed
the texts themselves, with a note on how its tokenizer reads accented and
mobile-style text."""

from kbert.export.agreement import min_agreement_for
from kbert.export.checks import FLOAT_TOLERANCE, describe, tokenizer_divergence
from kbert.export.measurements import batches, first_row
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.onnx.strings import LONG, OnnxTokenizer, string_feeds
from kbert.export.openvino.runner import OpenVinoRunner


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and timers of the ONNX file at `artifact` on `runtime` (see
    `kbert.export.formats.Exporter.measure`)."""
    if record.get("flavour") == "string":
        return run_strings(artifact, record, model, spec, texts, features, runtime)
    return run_token_ids(artifact, record, spec, features, runtime, "onnx")


def run_strings(path, record, model, spec, texts, features, runtime):
    """A `"string"` ONNX file fed `texts` on onnxruntime (with
    onnxruntime-extensions' ops); `features` are the model's own token inputs
    for the same texts, which Keras is compared on."""
    if runtime != "onnxruntime":
        raise ValueError(
            "A string-flavour ONNX file runs on onnxruntime with onnxruntime-extensions "
            f"(its tokenizer is a custom op); got runtime={runtime!r}."
        )
    runner = OnnxRunner(path)
    feeds = string_feeds(spec, texts)
    got = runner(feeds)
    one = {name: value[:1] for name, value in feeds.items()}
    parts = batches(feeds)
    quantization = record.get("quantization")
    served = OnnxTokenizer(model.preprocessor, sequence_length=LONG)
    divergence = tokenizer_divergence(model.preprocessor.tokenizer, served, served.name)
    return {
        "outputs": {k: v for k, v in got.items() if k in spec.output_names},
        "features": features,
        "one": lambda: runner(one),
        "many": lambda: runner.map(parts),
        "runtime": "onnxruntime + onnxruntime-extensions (CPU)",
        "bound": token_id_bound(record, "f32", spec),
        "format": "onnx string" + (f" {quantization}" if quantization else ""),
        "tokenizer": describe(divergence),
    }


def token_id_bound(record, precision, spec):
    """The bound an ONNX file or OpenVINO IR was verified with by its exporter,
    for a run at `precision`: float32 within the record's tolerance (1e-4);
    a quantized file, or a run at a lower precision (OpenVINO's bf16), by
    prediction agreement >= the export's `min_agreement` (or, where the
    export recorded none, kbert's default for the model: `min_agreement_for`).

    Example:
    >>> token_id_bound({"verification": {"tolerance": 1e-4}}, "f32", spec)
    {'tolerance': 0.0001, 'relative': False, 'min_agreement': None}
    >>> token_id_bound({"quantized": {"agreement": {"min_agreement": 0.98}}}, "f32", spec)
    {'tolerance': None, 'relative': False, 'min_agreement': 0.98}
    >>> token_id_bound({"verification": {"tolerance": 1e-4}}, "bf16", spec)["min_agreement"]
    0.99
    """
    agreement = (record.get("quantized") or record.get("verification") or {}).get(
        "agreement"
    ) or {}
    if record.get("quantized") or precision != "f32":
        minimum = min_agreement_for(spec, agreement.get("min_agreement"))
        return {"tolerance": None, "relative": False, "min_agreement": minimum}
    tolerance = (record.get("verification") or {}).get("tolerance", FLOAT_TOLERANCE)
    return {"tolerance": tolerance, "relative": False, "min_agreement": None}


def run_token_ids(path, record, spec, features, runtime, kind):
    """An ONNX file or OpenVINO IR run on token ids: on onnxruntime
    (`"onnxruntime"`) or OpenVINO at its default precision (`"openvino"`) or
    at float32 (`"openvino_f32"`), OpenVINO's batches in throughput mode;
    with its bound (`token_id_bound`) and its format as `kbert verify` names
    it (`kind` and the record's quantization)."""
    if runtime == "onnxruntime":
        runner, name, precision = OnnxRunner(path), "onnxruntime (CPU)", "f32"
        many = runner
    else:
        forced = "f32" if runtime == "openvino_f32" else None
        runner = OpenVinoRunner(path, precision=forced)
        name = runner.describe() + (" forced" if forced else " default")
        precision = runner.precision
        many = OpenVinoRunner(path, precision=forced, throughput=True)
    quantization = record.get("quantization")
    got = runner(features)
    one, parts = first_row(features), batches(features, cut=True)
    return {
        "outputs": got,
        "features": features,
        "one": lambda: runner(one),
        "many": lambda: many.map(parts),
        "runtime": name,
        "bound": token_id_bound(record, precision, spec),
        "format": kind + (f" {quantization}" if quantization else ""),
    }
