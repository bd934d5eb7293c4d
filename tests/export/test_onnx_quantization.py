"""Quantized ONNX: every flavour runs on onnxruntime, records the agreement it
measured on real text, and is refused below `min_agreement`."""

import dataclasses
import os
import shutil

import keras
import numpy as np
import onnx
import onnxruntime
import pytest

import kbert.export
from kbert.export import agreement
from kbert.export.onnx import quantization
from kbert.export.onnx.outliers import (
    PREFIX,
    head_matmuls,
    split_outlier_channels,
    weight_matmuls,
)
from kbert.export.onnx.quantization import (
    calibration_feeds,
    quantize_and_verify,
    quantize_onnx,
)
from kbert.export.onnx.quantization import recipe_for as quantization_recipe
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.record import read_record
from kbert.export.spec import export_spec
from kbert.utils import cpu
from tests.export.export_helpers import (
    near_ties,
    predictions_by_hand,
    tiny_model,
)


@pytest.fixture(scope="module")
def float_file(tmp_path_factory):
    """A verified float32 ONNX file of a tiny three-class classifier."""
    model = tiny_model(num_classes=3, hidden_dim=64)
    path = str(tmp_path_factory.mktemp("quantization") / "float32.onnx")
    kbert.export.onnx(model, path)
    return model, path


def _session(path):
    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def _predictions_by_hand(model, path):
    """The file's and Keras' classes on the held-out reviews (onnxruntime)."""
    session = _session(path)
    return predictions_by_hand(model, lambda batch: session.run(["logits"], batch)[0])


def _kappa(got, want):
    """Cohen's kappa: agreement beyond what two predictors that ignore their
    input, with these class shares, reach by chance (0: no better; 1: all
    predictions the same)."""
    classes = max(got.max(), want.max()) + 1
    chance = np.bincount(got, minlength=classes) @ np.bincount(want, minlength=classes)
    chance = chance / len(got) ** 2
    return (np.mean(got == want) - chance) / (1.0 - chance)


def _ops(path):
    return {node.op_type for node in onnx.load(path).graph.node}


@pytest.mark.parametrize(
    "quantization, expected_ops",
    [
        ("dynamic_int8", {"MatMulInteger", "DynamicQuantizeLinear"}),
        ("int8", {"QuantizeLinear", "DequantizeLinear"}),
        ("float16", {"Cast"}),
    ],
)
def test_each_quantization_runs_and_records_its_agreement(
    float_file, tmp_path, monkeypatch, quantization, expected_ops
):
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 128)  # the plumbing, faster
    model, float_path = float_file
    path = str(tmp_path / f"{quantization}.onnx")
    shutil.copy(float_path, path)
    summary = quantize_and_verify(model, export_spec(model), path, quantization, 0.0)
    proto = onnx.load(path)

    assert expected_ops <= _ops(path)
    assert os.path.getsize(path) < os.path.getsize(float_path)
    measured = summary["agreement"]
    assert measured["texts"].startswith("128 real texts")
    assert measured["kind"] == "argmax" and measured["min_agreement"] == 0.0
    got, want = _predictions_by_hand(model, path)
    assert len(got) == 128
    assert measured["value"] == pytest.approx(np.mean(got == want), abs=1e-9)
    # A tiny random model, but quantization must not scramble it. Keras gives
    # one class to 75-84% of these reviews (each backend's model), so a file
    # that ignored its input could agree on as many: beyond chance, the
    # agreement must be almost perfect (measured with 8-bit weights: kappa
    # 0.86-1.0; 7-bit ones, where products saturate, 0.76-0.80 on an AMD
    # Zen 3, against 0.48-0.74 for the saturated 8-bit file there).
    saturate = cpu.int8_products_saturate() and quantization != "float16"
    assert _kappa(got, want) >= (0.7 if saturate else 0.8), quantization
    if quantization != "float16":
        # 7-bit weights where 8-bit ones saturate, the CPU named.
        assert summary["reduce_range"] is saturate
        assert summary["cpu"] == cpu.cpu_name()
    if saturate:  # and they are the remedy: the 8-bit file is worse here
        (recipe, *_) = quantization_recipe(quantization).candidates()  # the one kept above
        recipe = dataclasses.replace(recipe, reduce_range=False)
        eight_bits = str(tmp_path / "eight_bits.onnx")
        feeds = (
            calibration_feeds(model, export_spec(model))
            if recipe.needs_calibration
            else None
        )
        quantize_onnx(float_path, eight_bits, recipe, feeds)
        saturated = _kappa(*_predictions_by_hand(model, eight_bits))
        assert saturated + 0.05 <= _kappa(got, want), (saturated, quantization)
    if quantization == "dynamic_int8":
        # min_agreement=0: the first ratio tried (no outlier bypass) is kept.
        assert summary["outlier_search"][-1]["outlier_ratio"] is None
        assert summary["outlier_channels"] == {"tensors": 0, "channels": 0}
        assert not any(n.name.startswith(PREFIX) for n in proto.graph.node)
        # The head stays float32: its MatMul is untouched in the file.
        head = head_matmuls(onnx.load(float_path))
        assert len(head) == 1
        assert head[0] in {n.name for n in proto.graph.node if n.op_type == "MatMul"}


@pytest.mark.backend_independent  # the search over a file's outlier ratios
def test_dynamic_int8_bypasses_outliers_only_where_the_texts_need_it(
    float_file, tmp_path, monkeypatch
):
    """Ratios are tried least bypass first; a file that misses min_agreement
    on the calibration texts, or then on the held-out ones, is passed over."""
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 128)
    model, float_path = float_file
    spec = export_spec(model)
    recipe = quantization.QuantizationRecipe(
        "dynamic", outlier_ratio=(None, 2.0, 1.5), max_outlier_channels=4
    )
    with pytest.raises(ValueError, match="quantize_and_verify searches"):
        quantization.quantize_onnx(float_path, str(tmp_path / "x.onnx"), recipe)
    # The first try misses on the calibration texts, the second on the
    # held-out ones; the third is the last and is measured as it is.
    measured = quantization.calibration_agreement
    forced = iter([0.0, 1.0])

    def calibration_agreement(*args):
        value = next(forced, None)
        return measured(*args) if value is None else value

    monkeypatch.setattr(quantization, "calibration_agreement", calibration_agreement)
    verify = agreement.verify_agreement
    checks = []

    def verify_once_refused(*args, **kwargs):
        checks.append(1)
        if len(checks) == 1:
            raise kbert.export.ExportVerificationError("below min_agreement")
        return verify(*args, **kwargs)

    monkeypatch.setattr(agreement, "verify_agreement", verify_once_refused)
    path = str(tmp_path / "searched.onnx")
    shutil.copy(float_path, path)
    summary = quantize_and_verify(model, spec, path, recipe, 0.5)
    search = summary["outlier_search"]
    assert [t["outlier_ratio"] for t in search] == [None, 2.0, 1.5]
    assert search[0]["calibration_agreement"] == 0.0 and "held_out" not in search[0]
    assert search[1]["held_out"] == "below min_agreement" and len(checks) == 2
    assert summary["outlier_ratio"] == 1.5 and summary["outlier_channels"]["tensors"]
    # What was recorded of the kept file is its own.
    feeds = calibration_feeds(model, spec, quantization.SEARCH_TEXTS)
    float_outputs = [OnnxRunner(float_path)(feed) for feed in feeds]
    assert search[2]["calibration_agreement"] == pytest.approx(
        measured(spec, float_outputs, OnnxRunner(path), feeds), abs=1e-12
    )
    got, want = _predictions_by_hand(model, path)
    assert summary["agreement"]["value"] == pytest.approx(np.mean(got == want), abs=1e-9)
    assert any(n.name.startswith(PREFIX) for n in onnx.load(path).graph.node)


def test_outlier_channels_split_computes_the_same_function(float_file, tmp_path):
    model, float_path = float_file
    spec = export_spec(model)
    proto = onnx.load(float_path)
    dense = len(weight_matmuls(proto))
    feeds = calibration_feeds(model, spec, 32)
    # A low ratio so that the tiny model has "outliers" to split off.
    float_nodes, outliers = split_outlier_channels(proto, feeds, ratio=1.5, max_channels=4)
    assert outliers and len(float_nodes) >= len(outliers)
    assert max(outliers.values()) <= 4
    onnx.checker.check_model(proto, full_check=True)
    path = str(tmp_path / "split.onnx")
    onnx.save(proto, path)
    assert len(weight_matmuls(onnx.load(path))) == dense + len(float_nodes)
    row = {k: v[:, :20] for k, v in feeds[0].items()}
    batch = {k: np.concatenate([f[k][:, :9] for f in feeds[:5]]) for k in feeds[0]}
    for feed in (row, batch):
        want = _session(float_path).run(None, feed)
        got = _session(path).run(None, feed)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_length_batches_give_each_text_its_own_outputs(float_file):
    """The OpenVINO int8 search runs its texts in `length_batched` batches:
    each text once, its outputs those of the text run alone (float file)."""
    model, float_path = float_file
    feeds = calibration_feeds(model, export_spec(model), 40)
    batches = quantization.length_batched(feeds, batch_size=16)
    assert [len(batch["token_ids"]) for batch in batches] == [16, 16, 8]
    runner = OnnxRunner(float_path)
    alone = {f["token_ids"].tobytes(): runner(f)["logits"][0] for f in feeds}
    seen = []
    for batch in batches:
        lengths = batch["padding_mask"].sum(-1)
        assert np.all(np.diff(lengths) >= 0)  # sorted by length
        logits = runner(batch)["logits"]
        for row, length in enumerate(lengths):
            assert not batch["padding_mask"][row, length:].any()
            key = batch["token_ids"][row : row + 1, :length].tobytes()
            np.testing.assert_allclose(logits[row], alone[key], atol=1e-5, rtol=0)
            seen.append(key)
    assert sorted(seen) == sorted(alone) and len(set(seen)) == len(feeds)


@pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="quantizing and refusing are the same code on every backend (two exports: "
    "about 25-50 s); each backend's ONNX graph is quantized in the tests above",
)
def test_quantized_export_records_agreement_and_refuses_below_the_minimum(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 160)  # two exports: keep it short
    # A tiny random model has no channel 3x the median one's (BERT's outliers
    # come from pretraining): at 1.5x it has some, so the record has a count
    # to be checked against the file.
    recipe = quantization.QuantizationRecipe(
        "dynamic", outlier_ratio=1.5, max_outlier_channels=4
    )
    monkeypatch.setitem(quantization.RECIPES, "dynamic_int8", recipe)
    model = tiny_model(num_classes=2)
    near_ties(model)
    path = tmp_path / "classifier_int8.onnx"
    record = kbert.export.onnx(
        model, str(path), quantization="dynamic_int8", min_agreement=0.5
    )
    stored = read_record(str(path))
    assert stored["quantization"] == "dynamic_int8"
    measured = stored["quantized"]["agreement"]["value"]
    assert measured == record["quantized"]["agreement"]["value"]
    assert stored["quantized"]["agreement"]["texts"].startswith("160 real texts")
    # The recorded agreement is the file's, measured again here (below 1:
    # this model's near-tied reviews do flip, so the refusal below is real).
    got, want = _predictions_by_hand(model, str(path))
    assert measured == pytest.approx(np.mean(got == want), abs=1e-9)
    assert measured < 1.0
    # The outlier channels recorded are the ones split off in the file: one
    # `kbert_outliers/<i>/channels` index list per activation tensor.
    split = {
        i.name: len(onnx.numpy_helper.to_array(i))
        for i in onnx.load(str(path)).graph.initializer
        if i.name.startswith(PREFIX + "/") and i.name.endswith("/channels")
    }
    assert split and max(split.values()) <= 4
    assert stored["quantized"]["outlier_channels"] == {
        "tensors": len(split),
        "channels": sum(split.values()),
    }
    assert max(stored["verification"]["max_abs_diff"].values()) <= 1e-4  # float32 first
    assert "MatMulInteger" in _ops(str(path))

    refused = tmp_path / "refused" / "classifier_int8.onnx"
    with pytest.raises(kbert.export.ExportVerificationError) as error:
        kbert.export.onnx(
            model, str(refused), quantization="dynamic_int8", min_agreement=measured + 1e-3
        )
    message = str(error.value)
    assert f"{measured:.4f}" in message
    assert "min_agreement=" in message and "--min-agreement" in message
    assert not refused.exists() and os.listdir(refused.parent) == []


def test_unknown_quantization_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="quantization must be one of"):
        kbert.export.onnx(
            tiny_model(num_classes=2), str(tmp_path / "x.onnx"), quantization="int4"
        )
