"""OpenVINO IR export: converted from the verified ONNX file, run on OpenVINO."""

import os

import keras
import numpy as np
import openvino
import pytest

import kbert.export
from kbert.export.record import read_record
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import features, keras_outputs, tiny_model


@pytest.mark.skipif(
    keras.backend.backend() != "torch",  # the backend with the shortest tests/export run
    reason="the IR is converted from the ONNX file, which every backend's "
    "test_onnx runs on OpenVINO already",
)
def test_openvino_ir_runs_in_plain_openvino(tmp_path):
    model = tiny_model(num_classes=2, id2label={0: "rotten", 1: "fresh"})
    path = tmp_path / "classifier_openvino"
    # A tiny random model has many near-tied reviews, which bf16 flips (0.988
    # measured on the PyTorch export); the fine-tuned review classifier changes
    # none of 200 held-out reviews (export/README.md).
    record = kbert.export.openvino(model, str(path), min_agreement=0.95)
    assert sorted(os.listdir(path)) == [
        "kbert_export.json",
        "openvino_model.bin",
        "openvino_model.xml",
    ]
    assert read_record(str(path))["labels"] == ["rotten", "fresh"]

    # What an OpenVINO user does: read the IR, compile it at float32, infer.
    core = openvino.Core()
    compiled = core.compile_model(
        str(path / "openvino_model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    texts = verification_texts(3, offset=90)
    inputs = {k: v[:, :13] for k, v in features(model, texts).items()}
    result = compiled.create_infer_request().infer(inputs)
    got = {port.get_any_name(): result[port] for port in compiled.outputs}
    for name, want in keras_outputs(model, inputs).items():
        np.testing.assert_allclose(got[name], want, atol=1e-4, rtol=0)

    verification = record["verification"]
    plugin = core.get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()
    assert verification["default_precision"] == plugin
    if plugin != "f32":  # bf16 on CPUs with AVX512_BF16 or AMX: checked by agreement
        assert verification["agreement"]["value"] >= 0.95
        assert verification["agreement"]["min_agreement"] == 0.95
    assert max(verification["max_abs_diff"].values()) <= 1e-4
