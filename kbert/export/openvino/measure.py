"""A written OpenVINO IR re-measured for `kbert verify`: on OpenVINO at the
precision it picks for this CPU and at float32, with the bound its exporter
verified it with (`kbert.export.onnx.measure.token_id_bound`)."""

import os

from kbert.export.formats import OPENVINO_XML
from kbert.export.onnx.measure import run_token_ids


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and batch-1 latency of the IR directory `artifact` on `runtime`
    (see `kbert.export.formats.Exporter.measure`)."""
    xml = os.path.join(artifact, OPENVINO_XML)
    return run_token_ids(xml, record, features, repeats, runtime, "openvino")
