"""OpenVINO IR export: converted from the verified ONNX file, run on OpenVINO."""

import os

import keras
import numpy as np
import openvino
import pytest

import kbert
import kbert.export
from kbert.export import ExportVerificationError, agreement
from kbert.export.record import read_record
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import (
    features,
    keras_outputs,
    predictions_by_hand,
    tiny_model,
)
from tests.trained_models import demo_classifier_preset


def _agreement_by_hand(model, compiled):
    """The recorded agreement measured again for a compiled IR;
    (agreement, reviews)."""
    request = compiled.create_infer_request()
    logits = next(port for port in compiled.outputs if port.get_any_name() == "logits")
    got, want = predictions_by_hand(model, lambda batch: request.infer(batch)[logits])
    return float(np.mean(got == want)), len(got)


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
    xml = str(path / "openvino_model.xml")
    compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
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
        # The recorded agreement is the IR's at the plugin's precision,
        # measured again here.
        value, count = _agreement_by_hand(model, core.compile_model(xml, "CPU"))
        assert count == agreement.AGREEMENT_TEXTS
        assert verification["agreement"]["value"] == pytest.approx(value, abs=1e-9)
        assert verification["agreement"]["min_agreement"] == 0.95
    else:
        assert "agreement" not in verification  # float32 is checked within 1e-4
    assert max(verification["max_abs_diff"].values()) <= 1e-4


ONCE = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="NNCF quantizes the OpenVINO model converted from the verified ONNX "
    "file, the same model whichever backend wrote it (only attention is written "
    "differently: `attention_nodes`' example covers tf2onnx's): run once, in the "
    "PyTorch run",
)


@ONCE
def test_int8_ir_of_the_review_classifier_keeps_its_predictions(tmp_path):
    """`quantization="int8"` on the fine-tuned review classifier: NNCF int8
    MatMuls (FakeQuantize in the IR), calibrated on real training reviews,
    agreeing with Keras on the 500 held-out reviews the exporter checks, and
    measured by `kbert verify` against its own agreement bound."""
    from kbert.export.measurements import artifact_row, gate

    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    path = tmp_path / "int8_ir"
    record = kbert.export.openvino(model, str(path), quantization="int8")
    assert read_record(str(path)) == record
    assert record["quantization"] == "int8"
    quantized = record["quantized"]
    assert quantized["method"] == "nncf int8 (transformer, attention in float)"
    assert quantized["calibration"] == "256 real texts (Rotten Tomatoes training)"
    # The narrowest float scope kept the search reviews' predictions, so no
    # wider one was tried.
    (rung,) = quantized["float_search"]
    assert rung["kept_in_float"] == "attention" and "held_out" not in rung
    assert 0.99 <= rung["calibration_agreement"] <= 1.0, rung
    recorded = quantized["agreement"]
    assert recorded["texts"].startswith("500 real texts"), recorded
    core = openvino.Core()
    xml = str(path / "openvino_model.xml")
    # The recorded agreement is the IR's at the plugin's default precision,
    # measured again here; the int8 IR keeps 99% of Keras' predictions.
    value, count = _agreement_by_hand(model, core.compile_model(xml, "CPU"))
    assert count == agreement.AGREEMENT_TEXTS
    assert recorded["value"] == pytest.approx(value, abs=1e-9)
    assert value >= 0.99, value
    ir = core.read_model(xml)
    fake_quantize = [op for op in ir.get_ops() if op.get_type_name() == "FakeQuantize"]
    # The activation input of every weight MatMul of 6 layers (q, k and v
    # share one; attention output, intermediate, output dense) at least.
    assert len(fake_quantize) >= 4 * 6, len(fake_quantize)
    # Attention stays float: int8 attention at the bf16 default of a CPU
    # with AMX agreed on 0.976 of the reviews.
    attention = [
        op for op in ir.get_ops() if op.get_type_name() == "ScaledDotProductAttention"
    ]
    assert len(attention) == 6
    fed = {
        op.input_value(i).get_node().get_type_name() for op in attention for i in range(3)
    }
    assert "FakeQuantize" not in fed, fed

    # kbert verify's default 200 reviews: at 0.99, 64 allowed no flip at all
    # (one of 64 flipped on an AMD Zen 3, where the 500 above agreed 0.992).
    row = gate([artifact_row(str(path), model, repeats=2)])[0]
    assert row["format"] == "openvino int8"
    assert row["bound"]["min_agreement"] == 0.99 and row["bound"]["max_diff"] is None
    assert row["passed"], row["misses"]


@ONCE
def test_int8_ir_of_the_sentence_embedder_keeps_its_embeddings(tmp_path):
    """all-MiniLM-L6-v2 at the embedders' default bound, mean cosine 0.999:
    with only attention in float the int8 IR keeps about 0.998, so the
    exporter keeps the narrowest float scope whose search texts hold the
    bound, and the saved IR holds it on the held-out texts."""
    from kbert.export.openvino.quantization import FLOAT_SCOPES

    model = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    path = tmp_path / "int8_ir"
    record = kbert.export.openvino(model, str(path), quantization="int8")
    quantized = record["quantized"]
    search = quantized["float_search"]
    bound = quantized["agreement"]["min_agreement"]
    assert bound == 0.999
    # Each scope tried before the kept one missed the bound on the search
    # texts; the kept one is named in the method.
    assert [rung["kept_in_float"] for rung in search] == list(FLOAT_SCOPES[: len(search)])
    for rung in search[:-1]:
        assert rung["calibration_agreement"] < bound or rung["held_out"], rung
    assert search[-1]["calibration_agreement"] >= bound, search
    assert quantized["method"] == (
        f"nncf int8 (transformer, {search[-1]['kept_in_float']} in float)"
    )
    recorded = quantized["agreement"]
    assert recorded["texts"].startswith("500 real texts"), recorded
    assert bound <= recorded["value"] <= 1.0, recorded
    ir = openvino.Core().read_model(str(path / "openvino_model.xml"))
    assert any(op.get_type_name() == "FakeQuantize" for op in ir.get_ops())


@ONCE
def test_int8_below_the_agreement_it_must_keep_is_refused(tmp_path):
    model = tiny_model(num_classes=2)
    path = tmp_path / "int8_ir"
    with pytest.raises(ExportVerificationError, match="OpenVINO quantization='int8'"):
        kbert.export.openvino(model, str(path), quantization="int8", min_agreement=1.01)
    assert not path.exists() and os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="OpenVINO export offers"):
        kbert.export.openvino(model, str(path), quantization="dynamic_int8")
