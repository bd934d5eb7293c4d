"""TFLite flavours, each run on its own runtime against the Keras model."""

import os

import keras
import numpy as np
import pytest
import tensorflow_text
from ai_edge_litert import interpreter as litert

import kbert.export
from kbert.export import agreement
from kbert.export.checks import (
    TokenizerDivergenceWarning,
    check_tokenization_parity,
    describe,
    tokenization_parity,
)
from kbert.export.measurements import artifact_row, measurement_table
from kbert.export.record import read_record
from kbert.export.tflite.exporter import TF_TEXT_TFLITE_OPS
from kbert.export.tflite.runner import tflite_custom_ops
from kbert.export.tflite.verification import MIN_TOKENIZATION_PARITY
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import (
    features,
    keras_outputs,
    near_ties,
    predictions_by_hand,
    preprocessor,
    tiny_model,
    vocabulary,
)

on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="TFLite graphs are traced on TensorFlow; JAX/torch reach the same code "
    "through the subprocess bridge (test_tflite_from_another_backend)",
)


def _signature(model_path, registrars=None):
    if registrars:
        interpreter = litert.InterpreterWithCustomOps(
            custom_op_registerers=registrars, model_path=model_path
        )
    else:
        interpreter = litert.Interpreter(model_path=model_path)
    return interpreter.get_signature_runner()


def _agreement_by_hand(model, path):
    """The recorded agreement measured again for a batch-1 token-ids file:
    each row of a batch run alone in the file; (agreement, reviews)."""
    runner = _signature(path)

    def logits_of(batch):
        rows = len(batch["token_ids"])
        return np.concatenate(
            [
                runner(**{k: v[i : i + 1] for k, v in batch.items()})["logits"]
                for i in range(rows)
            ]
        )

    got, want = predictions_by_hand(model, logits_of)
    return float(np.mean(got == want)), len(got)


def assert_strings_in_serve_like_keras(path, model):
    """A string-flavour file, run with tf-text's TFLite ops, gives the Keras
    model's outputs (on the TFLite tokenizer's ids) within 1e-4."""
    texts = verification_texts(5, offset=30)
    runner = _signature(path, tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    got = runner(text=np.array(texts, dtype=object))
    want = keras_outputs(model, features(model, texts, preprocessor("tflite")))
    for name in ("logits", "probabilities"):
        np.testing.assert_allclose(got[name], want[name], atol=1e-4, rtol=0)


@on_tensorflow
def test_string_flavour_runs_with_the_tf_text_registrar(tmp_path):
    model = tiny_model(num_classes=2)  # "exact" tokenizer: the export swaps in tf-text's
    path = str(tmp_path / "string.tflite")
    record = kbert.export.tflite(model, path, flavour="string")

    with open(path, "rb") as file:
        custom = set(tflite_custom_ops(file.read()))
    assert custom and custom <= TF_TEXT_TFLITE_OPS
    assert not any(op.startswith("Flex") for op in custom)
    with pytest.raises(RuntimeError, match="custom op"):
        _signature(path)(text=np.array(["a fine film"], dtype=object))

    assert_strings_in_serve_like_keras(path, model)
    # Counted on the exporter's 16 real sentences, against the model's own
    # ("exact") tokenizer, computed here the same way.
    texts16 = verification_texts(16)
    own = features(model, texts16)["token_ids"]
    served = features(model, texts16, preprocessor("tflite"))["token_ids"]
    agreeing = int(np.sum(np.all(own == served, axis=-1)))
    parity = record["verification"]["tokenization_parity"]
    assert parity == {
        "agreeing": agreeing,
        "texts": 16,
        "share": agreeing / 16,
        "minimum": MIN_TOKENIZATION_PARITY,
    }
    assert agreeing / 16 >= MIN_TOKENIZATION_PARITY
    divergence = record["verification"]["tokenizer_divergence"]
    assert divergence["deployment_tokenizer"].startswith("TFLite")
    assert divergence["max_abs_diff"]["logits"] <= 1e-4  # the file, emulated


TF_TEXT = "tf-text's TFLite tokenizer"


def test_tokenization_parity_is_counted_and_refused_below_its_bound():
    own = np.array([[2, 7, 3], [2, 8, 3], [2, 9, 3], [2, 5, 3]])
    served = own.copy()
    served[1:, 1] = 1  # [UNK] where the model's tokenizer found a word
    assert tokenization_parity(own, served) == {"agreeing": 1, "texts": 4, "share": 0.25}
    assert 0.25 < MIN_TOKENIZATION_PARITY <= 0.9375  # 15 of 16 reviews pass
    with pytest.raises(kbert.export.ExportVerificationError, match="only 1 of 4"):
        check_tokenization_parity(
            tokenization_parity(own, served),
            MIN_TOKENIZATION_PARITY,
            "TFLite (string)",
            TF_TEXT,
        )
    served[1:3, 1] = own[1:3, 1]  # 3 of 4 rows agree: at the bound
    parity = tokenization_parity(own, served)
    assert check_tokenization_parity(parity, MIN_TOKENIZATION_PARITY, "", TF_TEXT) == {
        "agreeing": 3,
        "texts": 4,
        "share": 0.75,
        "minimum": MIN_TOKENIZATION_PARITY,
    }


@on_tensorflow
def test_token_ids_flavour_is_builtin_only_with_dynamic_length(tmp_path):
    model = tiny_model("BertTokenClassifier", num_classes=4)
    path = str(tmp_path / "tokens.tflite")
    kbert.export.tflite(model, path, flavour="token_ids")
    with open(path, "rb") as file:
        assert tflite_custom_ops(file.read()) == []
    runner = _signature(path)  # a plain interpreter, nothing registered
    texts = verification_texts(2, offset=50)
    for length in (9, 17):  # batch 1, two sequence lengths
        row = {k: v[:1, :length] for k, v in features(model, texts).items()}
        got = runner(**row)
        want = keras_outputs(model, row)
        assert got["logits"].shape == (1, length, 4)
        np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4, rtol=0)


@on_tensorflow
def test_mediapipe_flavour_runs_in_mediapipe_text_classifier(tmp_path):
    from mediapipe.tasks.python.core.base_options import BaseOptions
    from mediapipe.tasks.python.text import text_classifier

    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    labels = {0: "rotten", 1: "fresh", 2: "plot"}
    model = tiny_model(num_classes=3, id2label=labels)  # uncased: strips accents
    path = str(tmp_path / "mediapipe.tflite")
    with pytest.warns(TokenizerDivergenceWarning) as caught:
        record = kbert.export.tflite(model, path, flavour="mediapipe")
    assert record["verification"]["mediapipe"]["labels"] == ["rotten", "fresh", "plot"]
    # The accented/mobile sentences: measured, stored, warned about, shown by
    # `kbert verify` (the counts against HF: test_tokenizer_divergence.py).
    divergence = record["verification"]["tokenizer_divergence"]
    assert divergence["deployment_tokenizer"] == "MediaPipe"
    assert divergence["agreement"] < 1.0 and "é" in divergence["characters"]
    assert divergence["max_abs_diff"]["probabilities"] <= 1e-4  # MediaPipe, emulated
    assert divergence["max_abs_diff_vs_model_tokenizer"]["probabilities"] > 1e-3
    assert read_record(path)["verification"]["tokenizer_divergence"] == divergence
    message = next(
        str(w.message) for w in caught if issubclass(w.category, TokenizerDivergenceWarning)
    )
    assert all(repr(c) in message for c in divergence["characters"])
    assert 'normalization="mediapipe"' in message
    row = artifact_row(path, model, num_examples=4, repeats=1)
    assert row["tokenizer"] == describe(divergence)
    assert row["tokenizer"] in measurement_table([row])

    options = text_classifier.TextClassifierOptions(
        base_options=BaseOptions(model_asset_path=path)
    )
    # MediaPipe's tokenizer lowercases but keeps accents: the last text
    # tokenizes differently from uncased BERT, the others identically.
    texts = verification_texts(3, offset=60) + ["Y Tu Mamá También."]
    own = keras_outputs(model, features(model, texts))["probabilities"]
    keeps_accents = BertPreprocessor(
        BertTokenizer(vocabulary(), lowercase=True, strip_accents=False),
        sequence_length=model.preprocessor.sequence_length,
    )
    like_mediapipe = keras_outputs(model, features(model, texts, keeps_accents))[
        "probabilities"
    ]
    got = np.zeros((len(texts), 3))
    with text_classifier.TextClassifier.create_from_options(options) as classifier:
        for row, text in enumerate(texts):
            for category in classifier.classify(text).classifications[0].categories:
                got[row, category.index] = category.score
                assert category.category_name == labels[category.index]
    np.testing.assert_allclose(got, like_mediapipe, atol=1e-4, rtol=0)
    np.testing.assert_allclose(got[:3], own[:3], atol=1e-4, rtol=0)
    assert np.max(np.abs(got[3] - own[3])) > 1e-4

    runner = _signature(path)
    details = runner.get_input_details()
    assert sorted(details) == ["ids", "mask", "segment_ids"]
    assert all(list(d["shape"]) == [1, 24] for d in details.values())


@on_tensorflow
def test_mediapipe_question_answerer_metadata(tmp_path):
    from kbert.export.tflite.metadata import read_metadata

    model = tiny_model("BertQuestionAnswerer")
    path = str(tmp_path / "qa.tflite")
    kbert.export.tflite(model, path, flavour="mediapipe")
    with open(path, "rb") as file:
        metadata = read_metadata(file.read())
    subgraph = metadata.subgraphMetadata[0]
    assert sorted(t.name for t in subgraph.outputTensorMetadata) == [
        b"end_logits",
        b"start_logits",
    ]
    assert sorted(t.name for t in subgraph.inputTensorMetadata) == [
        b"ids",
        b"mask",
        b"segment_ids",
    ]
    row = features(model, verification_texts(1, offset=3))
    got = _signature(path)(
        ids=row["token_ids"], mask=row["padding_mask"], segment_ids=row["segment_ids"]
    )
    for name, want in keras_outputs(model, row).items():
        np.testing.assert_allclose(got[name], want, atol=1e-4, rtol=0)


@on_tensorflow
def test_quantizations_shrink_the_file_and_stay_close(tmp_path, monkeypatch):
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 128)  # four exports: keep it short
    model = tiny_model(num_classes=2, hidden_dim=64)
    float32_bytes = sum(int(np.prod(v.shape)) * 4 for v in model.weights)
    row = features(model, verification_texts(6, offset=70))
    want = keras_outputs(model, row)["probabilities"]
    for quantization, size, bound in (("float16", 0.7, 2e-3), ("dynamic_int8", 0.5, 0.05)):
        path = str(tmp_path / f"{quantization}.tflite")
        record = kbert.export.tflite(
            model, path, quantization=quantization, min_agreement=0.95
        )
        assert os.path.getsize(path) < size * float32_bytes
        runner = _signature(path)
        got = np.concatenate(
            [
                runner(**{k: v[i : i + 1] for k, v in row.items()})["probabilities"]
                for i in range(6)
            ]
        )
        assert np.max(np.abs(got - want)) <= bound
        assert record["verification"]["relative_tolerance"] is True
        measured = record["verification"]["agreement"]
        assert measured["texts"].startswith("128 real texts")
        # The recorded agreement is the file's, measured again here.
        value, count = _agreement_by_hand(model, path)
        assert count == 128
        assert measured["value"] == pytest.approx(value, abs=1e-9), quantization
        assert measured["min_agreement"] == 0.95

    # Full int8 (activations too) is far from float32 on transformers: refused
    # by default, kept only with an explicit tolerance, and recorded as such.
    path = tmp_path / "int8.tflite"
    with pytest.raises(kbert.export.ExportVerificationError, match="tolerance="):
        kbert.export.tflite(model, str(path), quantization="int8")
    assert not path.exists()
    record = kbert.export.tflite(
        model, str(path), quantization="int8", tolerance=100.0, min_agreement=0.5
    )
    assert os.path.getsize(path) < 0.5 * float32_bytes
    assert record["verification"]["tolerance"] == 100.0
    measured = record["verification"]["agreement"]
    assert measured["min_agreement"] == 0.5
    value = _agreement_by_hand(model, str(path))[0]
    assert measured["value"] == pytest.approx(value, abs=1e-9)


@on_tensorflow
def test_full_int8_below_min_agreement_is_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 128)
    model = tiny_model(num_classes=2, hidden_dim=64)
    near_ties(model)
    path = tmp_path / "int8.tflite"
    with pytest.raises(kbert.export.ExportVerificationError) as error:
        kbert.export.tflite(model, str(path), quantization="int8", tolerance=100.0)
    message = str(error.value)
    assert "below the minimum agreement 0.99" in message
    assert "min_agreement=" in message and "--min-agreement" in message
    assert "outlier channels" in message and "dynamic_int8" in message
    assert not path.exists()


@pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="the bridge is the same for JAX and torch; PyTorch runs it in test_saved_model",
)
def test_tflite_from_another_backend(tmp_path):
    model = tiny_model(num_classes=2)
    path = str(tmp_path / "mediapipe.tflite")
    with pytest.warns(TokenizerDivergenceWarning, match="'é'"):
        record = kbert.export.tflite(model, path, flavour="mediapipe")
    assert record["cross_backend"]["mediapipe"]["max_abs_diff"]["probabilities"] <= 1e-4
    divergence = record["cross_backend"]["tokenizer_divergence"]
    in_tensorflow = record["verification"]["tokenizer_divergence"]
    for key in ("agreement", "characters", "example"):
        assert divergence[key] == in_tensorflow[key]
    assert divergence["agreement"] < 1.0
    row = features(model, verification_texts(2, offset=80))
    runner = _signature(path)
    got = runner(
        ids=row["token_ids"][:1],
        mask=row["padding_mask"][:1],
        segment_ids=row["segment_ids"][:1],
    )
    np.testing.assert_allclose(
        got["probability"],
        keras_outputs(model, {k: v[:1] for k, v in row.items()})["probabilities"],
        atol=1e-4,
        rtol=0,
    )
    # Strings in, exported from this backend too: tf-text's WordPiece in the file.
    path = str(tmp_path / "string.tflite")
    record = kbert.export.tflite(model, path, flavour="string")
    checked = record["cross_backend"]  # this backend's model against the file
    assert checked["max_abs_diff"]["probabilities"] <= 1e-4
    assert checked["tokenization_parity"]["share"] >= MIN_TOKENIZATION_PARITY
    assert_strings_in_serve_like_keras(path, model)
