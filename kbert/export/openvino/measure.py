"""A written OpenVINO IR re-measured for `kbert verify`: on OpenVINO at the
precision it picks for this CPU and at float32, with the bound its exporter
verified it with (`kbert.export.onnx.measure.token_id_bound`). A `"string"`
IR is fed the texts themselves; the table notes how its tokenizer did at
export (`kbert.export.openvino.strings.describe`)."""

import os

import numpy as np

from kbert.export.formats import OPENVINO_XML
from kbert.export.measurements import batches, first_row
from kbert.export.onnx.measure import run_token_ids, token_id_bound
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.openvino.strings import describe


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and timers of the IR directory `artifact` on `runtime`
    (see `kbert.export.formats.Exporter.measure`)."""
    xml = os.path.join(artifact, OPENVINO_XML)
    if record.get("flavour") == "string":
        return run_texts(xml, record, spec, texts, features, runtime)
    return run_token_ids(xml, record, spec, features, runtime, "openvino")


def run_texts(xml, record, spec, texts, features, runtime):
    """A `"string"` IR run on `texts` (`{text input: list of str}`) at
    OpenVINO's default precision (`"openvino"`) or float32
    (`"openvino_f32"`), batches in throughput mode. Its outputs answer
    `features` (the model's own tokenization of the texts), cut to the IR's
    padding (the longest text) where it returns per-token outputs."""
    forced = "f32" if runtime == "openvino_f32" else None
    runner = OpenVinoRunner(xml, precision=forced)
    feeds = {name: list(texts[name]) for name in spec.text_inputs}
    got = runner(feeds)
    if "token_ids" in got:
        length = np.asarray(got["token_ids"]).shape[-1]
        features = {
            name: np.asarray(value)[..., :length] for name, value in features.items()
        }
    one, parts = first_row(feeds), batches(feeds)
    many = OpenVinoRunner(xml, precision=forced, throughput=True)
    quantization = record.get("quantization")
    result = {
        "outputs": {
            name: value for name, value in got.items() if name in spec.output_names
        },
        "features": features,
        "one": lambda: runner(one),
        "many": lambda: many.map(parts),
        "runtime": runner.describe() + (" forced" if forced else " default"),
        "bound": token_id_bound(record, runner.precision, spec),
        "format": "openvino string" + (f" {quantization}" if quantization else ""),
    }
    tokenization = (record.get("verification") or {}).get("tokenization")
    if tokenization:
        result["tokenizer"] = describe(tokenization)
    return result
