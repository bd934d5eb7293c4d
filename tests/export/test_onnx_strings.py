"""ONNX with strings in (`flavour="string"`): onnxruntime-extensions'
WordPiece tokenizer inside the ONNX graph.

What holds: the graph's tokenizer splits the 37,608 corpus texts of
tests/preprocessing as the model's exact tokenizer (= Hugging Face
`tokenizers`) does (differences counted and bounded: 0 measured, uncased and
cased; the adversarial texts' differences pinned); the fine-tuned review
classifier's string file is within 1e-4 of Keras `predict` on the same texts;
it runs in a process that imports only onnxruntime and
onnxruntime_extensions; `kbert verify` measures it; what the flavour cannot
serve is refused by name, and nothing is written on a failed verification.
Exported from each Keras backend (run with KERAS_BACKEND=tensorflow, jax,
torch): the fine-tuned classifier's export (a minute) in the PyTorch run, a
tiny random classifier on MiniLM's real vocabulary in the TensorFlow and JAX
runs, each within 1e-4 of Keras `predict`; the tokenizer's corpus parity and
what depends on no backend run once, in the PyTorch run.
"""

import json
import subprocess
import sys
import time

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

onnxruntime_extensions = pytest.importorskip("onnxruntime_extensions")

from kbert.export.onnx import strings  # noqa: E402 - after the skip

UNCASED_VOCAB = MINILM_VOCABULARY
# The adversarial texts of tests/preprocessing/test_tokenizer_parity.py the
# op splits otherwise than the model's tokenizer (kinds documented in
# kbert/export/onnx/strings.py). Pinned: an onnxruntime-extensions upgrade
# that changes them is noticed.
KNOWN_DIFFERENCES = {
    "uncased": [
        "İstanbul ıi I",
        "ΟΔΟΣ ΣΑΣ σς Σ",
        "Tiếng Việt có dấu",
        "ﬁ ligature ™ ß ẞ Ⅻ ① ＡＢＣ１２３ ㎏",
        "日本語のテキスト 中文分词测试 한국어 텍스트",
        "Привет мир مرحبا بالعالم שלום नमस्ते दुनिया สวัสดีครับ",
        "emoji 😀👍🏽 family 👨\u200d👩\u200d👧 flag 🇫🇷 keycap 1️⃣",
        "nul\x00byte bell\x07 esc\x1b unit\x1fsep del\x7f",
        "zero\u200bwidth non\u200cjoiner joiner\u200d bom\ufeffhere",
        "soft\u00adhyphen bidi\u202eoverride\u202c private\ue000use repl\ufffdchar",
        "nbsp\u00a0here ideographic\u3000space line\u2028sep para\u2029sep",
        "[CLS] hello [SEP] world [SEP]",
        "x[MASK]y [mask] lower [UNK][PAD]",
        "[CL\u200bS] [[CLS]] [SEP [CLS",
    ],
    "cased": [
        "decomposed e\u0301 and a\u0308 and o\u0302\u0323",
        "Tiếng Việt có dấu",
        "emoji 😀👍🏽 family 👨\u200d👩\u200d👧 flag 🇫🇷 keycap 1️⃣",
        "nul\x00byte bell\x07 esc\x1b unit\x1fsep del\x7f",
        "zero\u200bwidth non\u200cjoiner joiner\u200d bom\ufeffhere",
        "soft\u00adhyphen bidi\u202eoverride\u202c private\ue000use repl\ufffdchar",
        "nbsp\u00a0here ideographic\u3000space line\u2028sep para\u2029sep",
        "[CLS] hello [SEP] world [SEP]",
        "x[MASK]y [mask] lower [UNK][PAD]",
        "[CL\u200bS] [[CLS]] [SEP [CLS",
    ],
}
# At most this many of the 37,608 corpus texts may tokenize otherwise
# (measured: 0 uncased, 0 cased).
MAX_CORPUS_DIFFERENCES = strings.CORPUS_DIFFERENCES


# The tokenizer ------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus():
    return corpus_texts()


@pytest.fixture(scope="module")
def vocabularies(corpus):
    """MiniLM's uncased vocabulary and a cased one trained on the corpus (as
    tests/preprocessing/test_tokenizer_parity.py does)."""
    pytest.importorskip("tokenizers")
    return {"uncased": UNCASED_VOCAB, "cased": cased_vocabulary(corpus)}


def _both_ways(vocabulary, lowercase, texts):
    """(the model's tokenizer's ids, the ONNX graph's ids), untruncated."""
    import tensorflow as tf

    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    tokenizer = BertTokenizer(vocabulary, lowercase=lowercase)
    own = tokenizer.tokenize_tensor(tf.constant(texts)).to_list()
    served = strings.OnnxTokenizer(BertPreprocessor(tokenizer, sequence_length=4096))
    got = []
    for start in range(0, len(texts), 256):
        got += strings.unpadded(served.ids(texts[start : start + 256]))
    return own, got


@pytest.mark.backend_independent  # TF string ops and onnxruntime: no backend
@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_tokenizer_ids_on_the_corpus(corpus, vocabularies, name):
    from tests.preprocessing.test_tokenizer_parity import ADVERSARIAL

    assert len(corpus) == strings.CORPUS_TEXTS
    start = time.perf_counter()
    own, got = _both_ways(vocabularies[name], name == "uncased", corpus)
    seconds = time.perf_counter() - start
    differ = [text for text, a, b in zip(corpus, own, got) if a != b]
    print(f"\n{name}: {len(differ)} of {len(corpus)} corpus texts differ ({seconds:.1f} s)")
    assert len(differ) <= MAX_CORPUS_DIFFERENCES, differ[:5]
    own, got = _both_ways(vocabularies[name], name == "uncased", ADVERSARIAL)
    differ = [text for text, a, b in zip(ADVERSARIAL, own, got) if a != b]
    assert differ == KNOWN_DIFFERENCES[name]


@pytest.mark.backend_independent
def test_truncation_keeps_sep_as_the_packer_does():
    from tests.export.export_helpers import preprocessor

    for length in (2, 3, 8, 24):
        packer = preprocessor(sequence_length=length)
        texts = verification_texts(16) + ["", "a", "the film"]
        want = features(None, texts, packer)
        got = strings.OnnxTokenizer(packer).ids(texts)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} {length}")
    assert strings.OnnxTokenizer(packer).ids([])["token_ids"].shape == (0, 24)


@pytest.mark.backend_independent
def test_a_vocabulary_without_mask():
    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"])
    packer = BertPreprocessor(tokenizer, sequence_length=6)
    got = strings.OnnxTokenizer(packer).ids(["a b c"])
    np.testing.assert_array_equal(got["token_ids"], [[2, 4, 5, 1, 3, 0]])


# The fine-tuned classifier; each backend's export ---------------------------


def _string_file(model, name, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("onnx_strings") / f"{name}.onnx")
    start = time.perf_counter()
    record = kbert.export.onnx(model, path, flavour="string")
    print(
        f"\nstring ONNX export of {name} ({keras.backend.backend()}): "
        f"{time.perf_counter() - start:.1f} s"
    )
    return model, path, record


@pytest.fixture(scope="module")
def demo_string_file(tmp_path_factory):
    """The fine-tuned review classifier and its string file (once per run)."""
    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    return _string_file(model, "reviews", tmp_path_factory)


@pytest.fixture(scope="module")
def tiny_string_file(tmp_path_factory):
    """A tiny random classifier on the review classifier's vocabulary and its
    string file, exported on this run's backend."""
    return _string_file(minilm_vocabulary_model(num_classes=2), "tiny", tmp_path_factory)


# Texts beyond the exporter's 16: held-out reviews, a long one (truncated),
# accents the uncased model strips, an empty text.
TEXTS = verification_texts(32, offset=200) + [
    "Naïve café owners in a crème brûlée of a film. " * 30,
    "Café au lait with a naïve friend, totally worth it!",
    "",
]


def _matches_keras_predict(model, path, record):
    from kbert.export.onnx.runner import OnnxRunner

    got = OnnxRunner(path)({"text": TEXTS})
    want = model.predict(TEXTS, verbose=0)
    want = want if isinstance(want, dict) else {"logits": want}
    for name, value in want.items():
        diff = float(np.max(np.abs(got[name] - np.asarray(value))))
        print(f"\n{name}: max |ONNX string - Keras predict| = {diff:.2e}")
        assert diff <= 1e-4
    assert read_record(path) == record
    assert record["flavour"] == "string" and record["inputs"] == ["text"]
    assert record["outputs"] == ["logits", "probabilities"]
    assert record["runtimes"] == ["onnxruntime"]
    tokenizer = record["tokenizer"]
    assert tokenizer["tokenization_parity"]["share"] == 1.0
    assert tokenizer["corpus_differences"]["differ"] == MAX_CORPUS_DIFFERENCES
    assert max(tokenizer["verification"]["max_abs_diff"].values()) <= 1e-4
    divergence = tokenizer["tokenizer_divergence"]
    assert divergence["texts"] == 12 and divergence["same"] >= 9, divergence


@REAL_WEIGHTS_ONCE
def test_demo_classifier_matches_keras_predict(demo_string_file):
    _matches_keras_predict(*demo_string_file)


@OTHER_BACKENDS
def test_each_backends_string_file_matches_keras_predict(tiny_string_file):
    _matches_keras_predict(*tiny_string_file)


@REAL_WEIGHTS_ONCE  # a fresh process reads the file; no backend in it
def test_runs_with_only_onnxruntime_and_extensions(demo_string_file, tmp_path):
    model, path, _ = demo_string_file
    texts = TEXTS[:4]
    want = keras_outputs(model, features(model, texts))["probabilities"]
    script = (
        "import json, sys\n"
        "import numpy as np, onnxruntime, onnxruntime_extensions\n"
        "options = onnxruntime.SessionOptions()\n"
        "options.register_custom_ops_library(onnxruntime_extensions.get_library_path())\n"
        "session = onnxruntime.InferenceSession(sys.argv[1], options)\n"
        "texts = np.array(json.loads(sys.argv[2]), dtype=object)\n"
        "probabilities = session.run(['probabilities'], {'text': texts})[0]\n"
        "heavy = [m for m in ('keras', 'tensorflow', 'jax', 'kbert') "
        "if m in sys.modules]\n"
        "print(json.dumps({'probabilities': probabilities.tolist(), 'heavy': heavy}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, path, json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # Neither kbert nor any Keras backend's TensorFlow or JAX (onnxruntime_extensions
    # itself imports torch and transformers when they are installed).
    assert out["heavy"] == []
    np.testing.assert_allclose(out["probabilities"], want, atol=1e-4, rtol=0)


@REAL_WEIGHTS_ONCE
def test_kbert_verify_measures_the_string_file(demo_string_file, capsys):
    from kbert.cli import main
    from kbert.export.measurements import artifact_row, artifact_runtimes

    model, path, _ = demo_string_file
    assert artifact_runtimes(path) == ("onnxruntime",)
    row = artifact_row(path, model, num_examples=16, repeats=2)
    assert row["format"] == "onnx string"
    assert row["runtime"] == "onnxruntime + onnxruntime-extensions (CPU)"
    assert row["max |diff|"] <= 1e-4 and row["agreement"] == 1.0
    assert "accented/mobile sentences" in row["tokenizer"]
    status = main(
        ["verify", path, "--model", demo_classifier_preset(), "--num-examples", "8"]
        + ["--repeats", "2"]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "onnx string" in out and "openvino" not in out.split("\n\n")[0]


# Tiny models: contract, refusals, quantization ------------------------------


def test_token_classifier_returns_its_token_ids(tmp_path):
    from kbert.export.onnx.runner import OnnxRunner

    model = tiny_model("BertTokenClassifier", num_classes=3)
    path = str(tmp_path / "tokens.onnx")
    record = kbert.export.onnx(model, path, flavour="string")
    assert record["outputs"][-1] == "token_ids"
    texts = verification_texts(3, offset=50)
    got = OnnxRunner(path)({"text": texts})
    inputs = features(model, texts)
    np.testing.assert_array_equal(got["token_ids"], inputs["token_ids"])
    want = keras_outputs(model, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, atol=1e-4, rtol=0)


@pytest.mark.backend_independent  # refused by name before any export work
@pytest.mark.parametrize(
    "cls_name, arguments, match",
    [
        ("BertQuestionAnswerer", {}, r"takes one text per row; a question_answerer"),
        ("BertMaskedLM", {}, r"splits literal \[MASK\]"),
        ("BertMultipleChoice", {"num_choices": 2}, r"one text per row; a multiple_choice"),
    ],
)
def test_refused_tasks_name_why(tmp_path, cls_name, arguments, match):
    path = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match=match):
        kbert.export.onnx(tiny_model(cls_name, **arguments), str(path), flavour="string")
    assert not path.exists()


@pytest.mark.backend_independent  # refused before any export work
def test_refusals_before_any_work(tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.raises(
        ValueError, match=r"flavour must be one of \('token_ids', 'string'\)"
    ):
        kbert.export.onnx(tiny_model(num_classes=2), str(path), flavour="mediapipe")
    with pytest.raises(ValueError, match="needs the model's preprocessor"):
        kbert.export.onnx(
            tiny_model(num_classes=2, preprocessor=None), str(path), flavour="string"
        )
    assert not path.exists()


@pytest.mark.backend_independent  # the string graph's tokenizer check: no backend
def test_nothing_is_written_when_the_string_file_misses(tmp_path, monkeypatch):
    model = tiny_model(num_classes=2)
    path = tmp_path / "m.onnx"

    def cased(tokenizer):  # a graph that keeps the capitals the model lowercases
        return {**original(tokenizer), "do_lower_case": 0}

    original = strings.op_attributes
    monkeypatch.setattr(strings, "op_attributes", cased)
    with pytest.raises(
        ExportVerificationError, match=r"BertTokenizer splits only \d+ of 16"
    ):
        kbert.export.onnx(model, str(path), flavour="string")
    assert not path.exists()


@pytest.mark.backend_independent  # onnxruntime quantizes the exported graphs
def test_quantized_string_file(tmp_path):
    from kbert.export.onnx.runner import OnnxRunner

    model = tiny_model(num_classes=2)
    string_path, id_path = str(tmp_path / "s.onnx"), str(tmp_path / "ids.onnx")
    record = kbert.export.onnx(
        model, string_path, flavour="string", quantization="dynamic_int8", min_agreement=0
    )
    kbert.export.onnx(model, id_path, quantization="dynamic_int8", min_agreement=0)
    assert record["quantization"] == "dynamic_int8"
    checked = record["tokenizer"]["verification"]
    assert checked["against"] == "the quantized token-id graph"
    # Same predictions, not 1e-4: onnxruntime fuses the id graph alone, and
    # int8 scales taken at run time amplify that rounding (module docstring).
    assert checked["tolerance"] is None and set(checked["max_abs_diff"]) == {
        "logits",
        "probabilities",
    }
    texts = verification_texts(8, offset=300)
    got = OnnxRunner(string_path)({"text": texts})
    want = OnnxRunner(id_path)(features(model, texts))
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, atol=1e-5, rtol=0)


@pytest.mark.backend_independent
def test_string_feeds_are_checked(demo_string_file):
    from kbert.export.onnx.runner import OnnxRunner

    runner = OnnxRunner(demo_string_file[1])
    with pytest.raises(
        ValueError, match=r"'text' takes a 1-D batch of texts \(str\); got int"
    ):
        runner({"text": [1, 2]})
    with pytest.raises(ValueError, match="wrap one text in a list"):
        runner({"text": "A fine film."})
    with pytest.raises(ValueError, match=r"got shape \(1, 2\)"):
        runner({"text": [["a", "b"]]})
    with pytest.raises(ValueError, match=r"takes inputs \['text'\]"):
        runner({"token_ids": np.zeros((1, 4), "int32")})


@pytest.mark.backend_independent
def test_the_command_line(tmp_path, capsys):
    from kbert.cli import main

    preset = str(tmp_path / "preset")
    tiny_model(num_classes=2).save_to_preset(preset)
    output = tmp_path / "classifier.onnx"
    status = main(
        ["export", preset, "--format", "onnx", "--flavour", "string", "-o", str(output)]
    )
    assert status == 0, capsys.readouterr()
    assert read_record(str(output))["flavour"] == "string"
    refused = tmp_path / "m.onnx"
    status = main(
        ["export", "no/such/model", "--format", "onnx", "--flavour", "mediapipe"]
        + ["-o", str(refused)]
    )
    assert status == 1
    assert "--flavour mediapipe: --format onnx offers token_ids, string" in (
        capsys.readouterr().err
    )
    assert not refused.exists()
