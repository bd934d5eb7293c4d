"""ONNX export on the current backend: dynamic axes, checker, onnxruntime parity."""

import importlib
import os

import keras
import numpy as np
import onnx
import onnxruntime
import openvino
import pytest

import kbert.export
from kbert.export.onnx.axes import axis_names
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.record import read_record
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import features, keras_outputs, tiny_model


def test_onnx_dynamic_axes_and_parity(tmp_path):
    model = tiny_model(num_classes=3, id2label={0: "neg", 1: "neutral", 2: "pos"})
    path = str(tmp_path / "classifier.onnx")
    record = kbert.export.onnx(model, path)

    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    assert {o.domain: o.version for o in proto.opset_import}[""] >= 17
    assert [i.name for i in proto.graph.input] == [
        "token_ids",
        "segment_ids",
        "padding_mask",
    ]
    # Named symbolic axes from every backend's exporter (tf2onnx's own names
    # are unk__NNNN, one per input).
    axes = axis_names(proto)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        assert axes[name] == ["batch", "sequence"]
    assert axes["logits"] == axes["probabilities"] == ["batch", 3]

    # A shape the exporter's own verification did not use: 3 x 11.
    texts = verification_texts(3, offset=40)
    inputs = {k: v[:, :11] for k, v in features(model, texts).items()}
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, session.run(None, inputs)))
    want = keras_outputs(model, inputs)
    assert sorted(got) == ["logits", "probabilities"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-4, rtol=0)
    assert np.ptp(want["logits"][:, 0]) > 1e-3  # outputs differ between texts

    # OpenVINO runs the same file: float32 forced matches Keras like
    # onnxruntime; its default precision is the one the CPU plugin reports.
    forced = OpenVinoRunner(path, precision="f32")
    assert forced.precision == "f32"
    for name, value in forced(inputs).items():
        np.testing.assert_allclose(value, want[name], atol=1e-4, rtol=0)
    default = OpenVinoRunner(path)
    plugin = openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT")
    assert default.precision == plugin.get_type_name()
    # At that precision, on 64 real sentences: logits within a bound (float32
    # 1e-4; bf16 on CPUs with AVX512_BF16/AMX keeps ~3 significant digits,
    # 1.4-2.1e-2 measured on the review classifier: 5e-2 x max(1, |logits|)),
    # and every prediction whose top-2 margin that bound cannot cross kept.
    sentences = features(model, verification_texts(64, offset=100))
    want = keras_outputs(model, sentences)["logits"]
    got = default(sentences)["logits"]
    bound = 1e-4 if default.precision == "f32" else 5e-2 * max(1.0, np.abs(want).max())
    assert np.max(np.abs(got - want)) <= bound
    top2 = np.sort(want, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * bound
    kept = np.argmax(got, -1) == np.argmax(want, -1)
    assert np.mean(clear) >= 0.5 and np.all(kept[clear])  # most are clear, none flip
    assert np.mean(kept) >= 0.9

    assert record["backend"] == keras.backend.backend()
    assert read_record(path)["labels"] == ["neg", "neutral", "pos"]
    assert max(record["verification"]["max_abs_diff"].values()) <= 1e-4


def test_onnx_refuses_an_artifact_that_disagrees(tmp_path, monkeypatch):
    """The export converts another model's weights: verification must catch it,
    and neither the target nor a temporary file is left behind."""
    onnx_module = importlib.import_module("kbert.export.onnx.exporter")  # not the function

    model = tiny_model(num_classes=2, seed=0)
    other = tiny_model(num_classes=2, seed=1)
    converter = {
        "tensorflow": "_from_tensorflow",
        "jax": "_from_jax",
        "torch": "_from_torch",
    }[keras.backend.backend()]
    real = getattr(onnx_module, converter)
    monkeypatch.setattr(
        onnx_module,
        converter,
        lambda m, spec, opset, sample: real(other, spec, opset, sample),
    )
    path = tmp_path / "out" / "classifier.onnx"
    with pytest.raises(
        kbert.export.ExportVerificationError, match="differs from the Keras"
    ):
        kbert.export.onnx(model, str(path))
    assert not path.exists()
    assert os.listdir(path.parent) == []


def test_onnx_question_answerer_outputs(tmp_path):
    model = tiny_model("BertQuestionAnswerer")
    path = str(tmp_path / "qa.onnx")
    kbert.export.onnx(model, path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["start_logits", "end_logits"]
    axes = axis_names(onnx.load(path))
    assert axes["token_ids"] == axes["start_logits"] == ["batch", "sequence"]
    texts = verification_texts(2, offset=7)
    inputs = {
        k: np.asarray(v)
        for k, v in model.preprocessor.preprocess((texts[:1] * 2, texts)).items()
    }
    got = dict(zip(["start_logits", "end_logits"], session.run(None, inputs)))
    for name, want in keras_outputs(model, inputs).items():
        np.testing.assert_allclose(got[name], want, atol=1e-4, rtol=0)


def test_one_model_is_converted_once_until_its_weights_change(tmp_path, monkeypatch):
    from kbert.export.onnx import exporter

    conversions = []
    converter = getattr(exporter, f"_from_{keras.backend.backend()}")
    monkeypatch.setattr(
        exporter,
        converter.__name__,
        lambda *args: conversions.append(1) or converter(*args),
    )
    model = tiny_model(num_classes=2)
    first = kbert.export.onnx(model, str(tmp_path / "a.onnx"))
    # (min_agreement: bf16 at OpenVINO's default flips near-tied reviews of a
    # random tiny model on CPUs with AVX512_BF16, 0.988 measured; not the point here.)
    kbert.export.openvino(model, str(tmp_path / "ov"), min_agreement=0.9)
    again = kbert.export.onnx(model, str(tmp_path / "b.onnx"))
    assert len(conversions) == 1
    assert again["verification"] == first["verification"]
    with open(tmp_path / "a.onnx", "rb") as a, open(tmp_path / "b.onnx", "rb") as b:
        assert onnx.load(a).graph == onnx.load(b).graph

    kernel = model.classifier.kernel
    kernel.assign(kernel.value * 2.0)
    kbert.export.onnx(model, str(tmp_path / "c.onnx"))
    assert len(conversions) == 2
    feeds = features(model, verification_texts(4, offset=7))
    runner = onnxruntime.InferenceSession(str(tmp_path / "c.onnx"))
    np.testing.assert_allclose(
        runner.run(["logits"], feeds)[0],
        keras_outputs(model, feeds)["logits"],
        atol=1e-4,
        rtol=0,
    )
