"""OpenVINO IR with strings in (`flavour="string"`): the model's WordPiece
tokenizer inside the IR, built by openvino-tokenizers.

What holds: the IR's tokenizer splits the 37,608 corpus texts of
tests/preprocessing as the model's exact tokenizer does (differences counted
and bounded: 0 measured, uncased and cased); the fine-tuned review
classifier's string IR is within 1e-4 of Keras `predict` on the same texts
at float32; it runs in a process that imports only openvino and
openvino_tokenizers; `kbert verify` measures it; what the flavour cannot
serve is refused by name. Exported from each Keras backend (run with
KERAS_BACKEND=tensorflow, jax, torch): the fine-tuned classifier's export
(a minute) in the PyTorch run, a tiny random classifier on MiniLM's real
vocabulary in the TensorFlow and JAX runs, each within 1e-4 of Keras
`predict`; the tokenizer's corpus parity and what depends on no backend run
once, in the PyTorch run.
"""

import json
import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

import kbert
import kbert.export
from kbert.export import ExportVerificationError
from kbert.export.record import read_record
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import (
    MINILM_VOCABULARY,
    OTHER_BACKENDS,
    REAL_WEIGHTS_ONCE,
    features,
    keras_outputs,
    minilm_vocabulary_model,
    tiny_model,
)
from tests.preprocessing.corpus import cased_vocabulary, corpus_texts
from tests.trained_models import demo_classifier_preset

openvino_tokenizers = pytest.importorskip("openvino_tokenizers")
import openvino  # noqa: E402 - after the skip: openvino_tokenizers needs it

from kbert.export.openvino.strings import string_tokenizer  # noqa: E402

XML = "openvino_model.xml"
UNCASED_VOCAB = MINILM_VOCABULARY
# Texts the IR's tokenizer splits otherwise than the model's (documented in
# kbert/export/openvino/strings.py): final sigma case-folded (uncased), a
# private-use character, a 101-byte/100-character word (cased keeps é).
KNOWN_DIFFERENCES = {
    "uncased": ["ΟΔΟΣ ΣΑΣ σς Σ", "soft\u00adhyphen bidi\u202eoverride"],
    "cased": ["soft\u00adhyphen bidi\u202eoverride", "é" * 100 + " "],
}
# At most this many of the 37,608 corpus texts may tokenize otherwise
# (measured: 0 uncased, 0 cased).
MAX_CORPUS_DIFFERENCES = 0


# The tokenizer ------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus():
    return corpus_texts()


def _differing(preprocessor, texts):
    """Indices of `texts` the IR's tokenizer packs otherwise than `preprocessor`."""
    compiled = openvino.Core().compile_model(string_tokenizer(preprocessor), "CPU")
    own = features(None, texts, preprocessor)
    differing = []
    for start in range(0, len(texts), 1024):
        result = compiled(texts[start : start + 1024])
        served = {port.get_any_name(): result[port] for port in compiled.outputs}
        for row in range(len(served["token_ids"])):
            length = own["token_ids"].shape[1]
            padded = {
                name: np.pad(value[row], (0, length - value.shape[1]))
                for name, value in served.items()
            }
            if any(not np.array_equal(padded[k], own[k][start + row]) for k in padded):
                differing.append(start + row)
    return differing


@pytest.mark.backend_independent  # openvino-tokenizers' graph: no Keras model
@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_the_irs_tokenizer_packs_the_corpus_as_the_model_does(corpus, casing):
    """Ids, segment ids and mask of all 37,608 texts at sequence length 128
    (truncated ones end in [SEP], as `predict` cuts them)."""
    from kbert.preprocessing import BertPreprocessor, BertTokenizer
    from tests.preprocessing.test_tokenizer_parity import ADVERSARIAL

    assert len(corpus) == 37608
    vocabulary = UNCASED_VOCAB if casing == "uncased" else cased_vocabulary(corpus)
    tokenizer = BertTokenizer(vocabulary, lowercase=casing == "uncased")
    preprocessor = BertPreprocessor(tokenizer, sequence_length=128)
    with warnings.catch_warnings():  # texts longer than 128 are cut, as predict does
        warnings.simplefilter("ignore")
        differing = _differing(preprocessor, corpus)
    print(f"\n{casing}: {len(differing)} of {len(corpus)} corpus texts differ")
    assert len(differing) <= MAX_CORPUS_DIFFERENCES, [corpus[i] for i in differing[:5]]

    differing = _differing(preprocessor, ADVERSARIAL)
    found = [ADVERSARIAL[i] for i in differing]
    assert len(found) == len(KNOWN_DIFFERENCES[casing]), found
    for text, start in zip(found, KNOWN_DIFFERENCES[casing]):
        assert text.startswith(start), (text, start)


# The review classifier's string IR ----------------------------------------


@pytest.fixture(scope="module")
def review_ir(tmp_path_factory):
    """The fine-tuned review classifier and its string IR, exported once."""
    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    path = tmp_path_factory.mktemp("strings") / "review_ir"
    record = kbert.export.openvino(model, str(path), flavour="string")
    return model, str(path), record


# A tiny random model has near-tied reviews that bf16 flips: its bound at
# OpenVINO's default precision is lower (the fine-tuned one's: 0.99).
TINY_MIN_AGREEMENT = 0.9


@pytest.fixture(scope="module")
def tiny_ir(tmp_path_factory):
    """A tiny random classifier on the review classifier's vocabulary and its
    string IR, exported on this run's backend."""
    model = minilm_vocabulary_model(num_classes=2)
    path = tmp_path_factory.mktemp("strings") / "tiny_ir"
    record = kbert.export.openvino(
        model, str(path), flavour="string", min_agreement=TINY_MIN_AGREEMENT
    )
    return model, str(path), record


def _texts():
    """Held-out reviews the exporter did not verify on, one longer than the
    sequence length (cut), accented and mobile-style ones, one empty."""
    return [
        *verification_texts(24, offset=600),
        " ".join(verification_texts(12, offset=700)),
        "Café au lait with a naïve friend… totally worth it! 😍",
        "Ｆｕｌｌ-ｗｉｄｔｈ ｔｅｘｔ： ＯＫ！",
        "",
    ]


def _predicts_as_keras_does(model, path, record, min_agreement):
    assert read_record(path) == record
    assert record["flavour"] == "string"
    assert record["inputs"] == record["text_inputs"] == ["text"]
    assert record["outputs"] == ["logits", "probabilities"]
    assert record["sequence_length"] == model.preprocessor.sequence_length
    verification = record["verification"]
    assert max(verification["max_abs_diff"].values()) <= 1e-4
    tokenization = verification["tokenization"]
    assert tokenization["real"] == {"texts": 500, "same": 500, "share": 1.0}
    assert tokenization["accented_mobile"]["same"] == 12

    texts = _texts()
    core = openvino.Core()
    compiled = core.compile_model(
        os.path.join(path, XML), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    result = compiled(texts)
    got = {name: result[name] for name in record["outputs"]}
    with pytest.warns(Warning, match="truncated"):  # the long review
        logits = model.predict(texts, verbose=0)
    logits = np.asarray(keras.ops.convert_to_numpy(logits))
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    diff = np.max(np.abs(got["logits"] - logits))
    print(f"\nmax |IR f32 - Keras predict| on {len(texts)} texts: logits {diff:.2e}")
    np.testing.assert_allclose(got["logits"], logits, atol=1e-4, rtol=0)
    np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-4, rtol=0)

    # At OpenVINO's default precision for this CPU: the recorded agreement.
    if verification["default_precision"] != "f32":
        assert verification["agreement"]["value"] >= min_agreement
        assert verification["agreement"]["texts"].startswith("500 real texts")


@REAL_WEIGHTS_ONCE
def test_the_string_ir_predicts_as_keras_does(review_ir):
    _predicts_as_keras_does(*review_ir, min_agreement=0.99)


@OTHER_BACKENDS
def test_each_backends_string_ir_predicts_as_keras_does(tiny_ir):
    _predicts_as_keras_does(*tiny_ir, min_agreement=TINY_MIN_AGREEMENT)


@REAL_WEIGHTS_ONCE  # a fresh process reads the IR; no backend in it
def test_the_string_ir_runs_with_only_openvino_and_its_tokenizers(review_ir):
    model, path, _ = review_ir
    texts = _texts()[:6]
    script = (
        "import json, sys\n"
        "import openvino as ov\n"
        "import openvino_tokenizers  # registers the tokenizer's ops\n"
        f"compiled = ov.Core().compile_model({os.path.join(path, XML)!r}, 'CPU', "
        "{'INFERENCE_PRECISION_HINT': 'f32'})\n"
        f"result = compiled({texts!r})\n"
        "heavy = [m for m in ('kbert', 'keras', 'tensorflow', 'torch', 'jax', "
        "'transformers', 'tokenizers') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, "
        "'probabilities': result['probabilities'].tolist()}))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=os.path.dirname(path),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["heavy"] == []
    want = keras_outputs(model, features(model, texts))["probabilities"]
    np.testing.assert_allclose(np.array(answer["probabilities"]), want, atol=1e-4, rtol=0)


@REAL_WEIGHTS_ONCE
def test_kbert_verify_measures_the_string_ir(review_ir):
    from kbert.export.measurements import artifact_row, gate, measurement_table
    from kbert.export.openvino.runner import OpenVinoRunner

    model, path, _ = review_ir
    rows = [
        artifact_row(path, model, num_examples=48, repeats=2, runtime=runtime)
        for runtime in ("openvino", "openvino_f32")
    ]
    rows = gate(rows)
    default, forced = rows
    assert default["format"] == forced["format"] == "openvino string"
    assert forced["runtime"].endswith("CPU (f32) forced")
    assert forced["max |diff|"] <= 1e-4 and forced["bound"]["max_diff"] is not None
    assert all(row["passed"] for row in rows), [row["misses"] for row in rows]
    assert "500/500 real" in forced["tokenizer"]
    assert "tokenizer: openvino-tokenizers at export" in measurement_table(rows)

    # Feeds are texts: token ids are refused by name.
    runner = OpenVinoRunner(os.path.join(path, XML))
    with pytest.raises(ValueError, match="Input 'text' takes a batch of texts"):
        runner({"text": np.array([[2, 7, 3]], "int32")})
    with pytest.raises(ValueError, match="got one str: wrap it in a list"):
        runner({"text": "A fine film."})


@REAL_WEIGHTS_ONCE
def test_throughput_mode_maps_batches_to_the_outputs_of_one_call_each(review_ir):
    """`OpenVinoRunner(throughput=True).map`: requests in flight on every
    stream at once, outputs in the batches' order, equal to calling the IR on
    each batch alone (float32 forced: the same kernels, so to rounding)."""
    from kbert.export.openvino.runner import OpenVinoRunner

    _, path, _ = review_ir
    texts = _texts()
    batches = [{"text": texts[start : start + 5]} for start in range(0, len(texts), 5)]
    one_at_a_time = OpenVinoRunner(os.path.join(path, XML), precision="f32")
    expected = [one_at_a_time(batch) for batch in batches]
    streams = OpenVinoRunner(os.path.join(path, XML), precision="f32", throughput=True)
    assert streams.describe().endswith(" streams)")
    got = streams.map(batches)
    assert [sorted(out) for out in got] == [sorted(out) for out in expected]
    for out, reference in zip(got, expected):
        assert out["logits"].shape == reference["logits"].shape
        np.testing.assert_allclose(out["logits"], reference["logits"], atol=1e-5, rtol=0)
    # Batches of other lengths side by side keep their own rows.
    assert len({out["logits"].shape[0] for out in got}) == 2  # 5 and the last 3
    assert (
        one_at_a_time.map(batches)[0]["logits"].tolist() == expected[0]["logits"].tolist()
    )


# Tiny models: what the flavour does besides classifiers, and refuses -------


def test_a_per_token_model_also_returns_its_token_ids(tmp_path):
    model = tiny_model("BertTokenClassifier", num_classes=3)
    path = tmp_path / "tokens_ir"
    record = kbert.export.openvino(model, str(path), flavour="string", min_agreement=0.5)
    assert record["outputs"] == ["logits", "probabilities", "token_ids"]
    texts = ["the film was good", "a very very boring plot, not fun at all"]
    compiled = openvino.Core().compile_model(
        str(path / XML), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    result = compiled(texts)
    got = {name: result[name] for name in record["outputs"]}
    own = features(model, texts)
    length = got["token_ids"].shape[1]
    assert length == own["padding_mask"].sum(-1).max()  # padded to the longest
    np.testing.assert_array_equal(got["token_ids"], own["token_ids"][:, :length])
    cut = {name: value[:, :length] for name, value in own.items()}
    want = keras_outputs(model, cut)
    np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4, rtol=0)


@pytest.mark.backend_independent  # refused by name before any export work
def test_what_the_string_flavour_cannot_serve_is_refused_by_name(tmp_path, capsys):
    from kbert.cli import main

    path = tmp_path / "ir"
    command = ["export", "no/such/model", "--format", "openvino", "-o", str(path)]
    assert main([*command, "--flavour", "mediapipe"]) == 1  # before the model loads
    assert "--flavour mediapipe: --format openvino offers token_ids, string" in (
        capsys.readouterr().err
    )
    with pytest.raises(ValueError, match=r"flavour='mediapipe': OpenVINO export offers"):
        kbert.export.openvino(None, str(path), flavour="mediapipe")
    masked_lm = tiny_model("BertMaskedLM")
    with pytest.raises(ValueError, match='flavour="string" does not support a masked_lm'):
        kbert.export.openvino(masked_lm, str(path), flavour="string")
    no_text = tiny_model(num_classes=2, preprocessor=None)
    with pytest.raises(ValueError, match="needs the model's preprocessor"):
        kbert.export.openvino(no_text, str(path), flavour="string")
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent  # named before any export work
def test_a_library_export_needs_is_named_before_any_work(tmp_path, monkeypatch):
    from kbert.export.openvino import strings

    libraries = {**strings.EXPORT_LIBRARIES, "no_such_module": "transformers"}
    monkeypatch.setattr(strings, "EXPORT_LIBRARIES", libraries)
    with pytest.raises(ImportError, match="pip install transformers to export"):
        kbert.export.openvino(
            tiny_model(num_classes=2), str(tmp_path / "ir"), flavour="string"
        )
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent  # the IR's tokenizer against the model's: no backend
def test_a_tokenizer_that_splits_otherwise_is_refused(tmp_path, monkeypatch):
    """An IR whose tokenizer is not the model's (here: cased, for an uncased
    model) is refused by its tokenization count; nothing is written."""
    from kbert.export.openvino import strings

    build = strings._transformers_tokenizer

    def cased(preprocessor):
        from kbert.preprocessing import BertPreprocessor, BertTokenizer

        tokenizer = preprocessor.tokenizer
        other = BertTokenizer(tokenizer.get_vocabulary(), lowercase=False)
        return build(BertPreprocessor(other, sequence_length=preprocessor.sequence_length))

    monkeypatch.setattr(strings, "_transformers_tokenizer", cased)
    path = tmp_path / "ir"
    with pytest.raises(ExportVerificationError, match="MIN_TOKENIZATION_PARITY"):
        kbert.export.openvino(tiny_model(num_classes=2), str(path), flavour="string")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="NNCF quantizes the OpenVINO model converted from the verified ONNX "
    "file, the same whichever backend wrote it: run once, in the PyTorch run",
)
def test_int8_with_strings_quantizes_the_id_model_then_adds_the_tokenizer(tmp_path):
    from kbert.export.measurements import artifact_row

    model = tiny_model(num_classes=2)
    path = tmp_path / "int8_strings"
    # A tiny random model has many near-tied reviews: a low bound; the bound
    # itself is tested in test_openvino.py.
    record = kbert.export.openvino(
        model, str(path), flavour="string", quantization="int8", min_agreement=0.8
    )
    assert record["quantization"] == "int8" and record["flavour"] == "string"
    assert record["quantized"]["agreement"]["texts"].startswith("500 real texts")
    assert record["verification"]["tokenization"]["real"]["share"] == 1.0
    ir = openvino.Core().read_model(str(path / XML))
    assert [port.get_element_type() for port in ir.inputs] == [openvino.Type.string]
    assert any(op.get_type_name() == "FakeQuantize" for op in ir.get_ops())
    row = artifact_row(str(path), model, num_examples=16, repeats=2)
    assert row["format"] == "openvino string int8"


@pytest.mark.backend_independent  # the command line's Python; each backend exports tiny_ir
def test_kbert_export_and_verify_on_the_command_line(tmp_path, capsys):
    from kbert.cli import main

    model = tiny_model(num_classes=2, id2label={0: "rotten", 1: "fresh"})
    source = str(tmp_path / "classifier.keras")
    model.save(source)
    artifact = str(tmp_path / "classifier_text_openvino")
    command = ["export", source, "--format", "openvino", "--flavour", "string"]
    # A tiny random model has near-tied reviews that bf16 flips.
    assert main([*command, "--min-agreement", "0.9", "-o", artifact]) == 0
    record = read_record(artifact)
    assert record["flavour"] == "string" and record["source"] == source
    capsys.readouterr()
    assert main(["verify", artifact, "--repeats", "2", "--num-examples", "16"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "openvino string" in line]
    assert len(rows) == 2 and "forced" in rows[1], out
    assert "tokenizer: openvino-tokenizers at export: 500/500 real" in out
