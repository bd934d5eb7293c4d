"""Parity of BertTokenizer / BertPreprocessor with Hugging Face `tokenizers`.

Runs once (`backend_independent`, in the PyTorch run): string preprocessing
is the same TensorFlow ops on every Keras backend, so running this on every
backend would only repeat it (the backend-specific paths, tf.data and fit, are tested
on all three in test_preprocessor.py).

Reference: `tokenizers.BertWordPieceTokenizer` built from the same vocab.txt
with the same lowercase / strip_accents, in this process. Tolerance: none for
the exact mode (every id, type id, mask and offset equal); the TFLite mode's
mismatches are counted, printed by kind (run with -s) and must all be of the
documented kinds.
"""

import unicodedata

import keras
import numpy as np
import pytest

from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.preprocessing.corpus import (
    MINILM_VOCABULARY,
    SPECIALS,
    cased_vocabulary,
    corpus_texts,
)
from tests.preprocessing.unicode_gap import GAP
from tests.test_case import ragged_lists

tokenizers = pytest.importorskip("tokenizers")

pytestmark = pytest.mark.backend_independent

UNCASED_VOCAB = MINILM_VOCABULARY


ADVERSARIAL = [
    # accents, casing
    "Café Müller naïve résumé Ångström ÉCOLE Ørsted",
    "İstanbul ıi I",
    "decomposed e\u0301 and a\u0308 and o\u0302\u0323",
    "ΟΔΟΣ ΣΑΣ σς Σ",
    "Tiếng Việt có dấu",
    "ﬁ ligature ™ ß ẞ Ⅻ ① ＡＢＣ１２３ ㎏",
    # scripts
    "日本語のテキスト 中文分词测试 한국어 텍스트",
    "𠀀𠀁 𪜀 𫠠 𫝀 豈",
    "Привет мир مرحبا بالعالم שלום नमस्ते दुनिया สวัสดีครับ",
    # emoji
    "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷 keycap 1️⃣",
    # control, format, zero-width, odd whitespace
    "nul\x00byte bell\x07 esc\x1b unit\x1fsep del\x7f",
    "zero\u200bwidth non\u200cjoiner joiner\u200d bom\ufeffhere",
    "soft\u00adhyphen bidi\u202eoverride\u202c private\ue000use repl\ufffdchar",
    "tab\tnew\nline\rcr vt\x0bff\x0cnel\x85end",
    "nbsp\u00a0here ideographic\u3000space line\u2028sep para\u2029sep",
    # literal special tokens
    "[CLS] hello [SEP] world [SEP]",
    "x[MASK]y [mask] lower [UNK][PAD]",
    "[CL\u200bS] [[CLS]] [SEP [CLS",
    # long words (the 100-character limit)
    "a" * 200,
    "word " + "b" * 101 + " after",
    "x" * 100 + " " + "y" * 101,
    "é" * 100 + " " + "é" * 101,
    "😀" * 30 + " " + "日" * 120,
    "ab" * 60 + ",short",
    # empty and whitespace-only
    "",
    " ",
    "\t\n",
    "\u3000\u200b",
    # punctuation and symbols
    'hello,world!!! (test) "quotes" ‘single’ «guillemets» — dash… ¿qué? ¡sí!',
    "$100 ^_^ `code` |pipe| ~tilde~ <tag> a+b=c 50% #hash @user",
    "email@example.com http://x.y/z?q=1&r=2 3.14159 1,000,000 2nd",
]

# Pairs whose truncation budget is odd (sequence_length 16: 13) and even
# (17: 14), with equal, unequal, empty and special-token segments.
PAIR_LENGTHS = (16, 17)
ADVERSARIAL_PAIRS = [
    ("one two three four five six seven eight", "one two three four five six seven eight"),
    ("one two three four five six seven eight nine ten", "a b"),
    ("a b", "one two three four five six seven eight nine ten eleven"),
    ("", "one two three four five six seven eight nine ten eleven twelve"),
    ("one two three four five six seven eight nine ten eleven twelve", ""),
    ("", ""),
    ("[CLS] [SEP] [MASK] " * 4, "naïve café " * 6),
    ("x" * 150, "y " * 20),
]


@pytest.fixture(scope="module")
def corpus():
    return corpus_texts()


@pytest.fixture(scope="module")
def cased_vocab(tmp_path_factory, corpus):
    """A cased vocabulary trained by `tokenizers` on the corpus itself."""
    path = tmp_path_factory.mktemp("cased") / "vocab.txt"
    path.write_text("".join(f"{t}\n" for t in cased_vocabulary(corpus)), "utf-8")
    return str(path)


def hf_tokenizer(vocab, lowercase, strip_accents=None):
    return tokenizers.BertWordPieceTokenizer(
        vocab, lowercase=lowercase, strip_accents=strip_accents
    )


def ids_of(encodings):
    return [encoding.ids for encoding in encodings]


@pytest.fixture(scope="module")
def vocabularies(cased_vocab):
    return {"uncased": UNCASED_VOCAB, "cased": cased_vocab}


@pytest.fixture(scope="module")
def texts(corpus):
    return ADVERSARIAL + corpus


@pytest.fixture(scope="module")
def hf_encodings(vocabularies, texts):
    """HF's encodings of every text (no special tokens), per vocabulary."""
    cache = {}

    def get(name):
        if name not in cache:
            hf = hf_tokenizer(vocabularies[name], lowercase=name == "uncased")
            cache[name] = hf.encode_batch(texts, add_special_tokens=False)
        return cache[name]

    return get


def assert_same(ours, theirs, texts, what):
    assert len(ours) == len(theirs) == len(texts)
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert not bad, (
        f"{what}: {len(bad)} of {len(texts)} differ, first: {texts[bad[0]]!r}\n"
        f"ours {ours[bad[0]]}\nhf   {theirs[bad[0]]}"
    )


@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_exact_ids_on_corpus(corpus, texts, vocabularies, hf_encodings, name):
    assert len(corpus) >= 20000
    tokenizer = BertTokenizer(vocabularies[name], lowercase=name == "uncased")
    ids = ragged_lists(tokenizer(texts))
    assert_same(ids, ids_of(hf_encodings(name)), texts, "ids")


@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_exact_offsets(texts, vocabularies, hf_encodings, name):
    # Offsets of the adversarial texts and every fourth corpus text.
    keep = list(range(len(ADVERSARIAL))) + list(range(len(ADVERSARIAL), len(texts), 4))
    subset = [texts[i] for i in keep]
    reference = [hf_encodings(name)[i] for i in keep]
    tokenizer = BertTokenizer(vocabularies[name], lowercase=name == "uncased")
    ids, starts, ends = (ragged_lists(t) for t in tokenizer.tokenize_with_offsets(subset))
    assert_same(ids, ids_of(reference), subset, "ids with offsets")
    offsets = [list(zip(s, e)) for s, e in zip(starts, ends)]
    assert_same(offsets, [e.offsets for e in reference], subset, "offsets")


@pytest.mark.parametrize(
    "lowercase, strip_accents", [(True, False), (False, True)], ids=str
)
def test_exact_ids_other_accent_settings(texts, vocabularies, lowercase, strip_accents):
    subset = ADVERSARIAL + texts[len(ADVERSARIAL) :: 10]
    vocab = vocabularies["uncased" if lowercase else "cased"]
    hf = hf_tokenizer(vocab, lowercase, strip_accents)
    tokenizer = BertTokenizer(vocab, lowercase=lowercase, strip_accents=strip_accents)
    reference = hf.encode_batch(subset, add_special_tokens=False)
    assert_same(ragged_lists(tokenizer(subset)), ids_of(reference), subset, "ids")


def check_packing(tokenizer, vocab, lowercase, segments, length, offsets):
    hf = hf_tokenizer(vocab, lowercase=lowercase)
    hf.enable_truncation(length, strategy="longest_first")
    hf.enable_padding(length=length)
    inputs = segments[0] if len(segments) == 1 else list(zip(*segments))
    reference = hf.encode_batch(inputs)
    preprocessor = BertPreprocessor(
        tokenizer, sequence_length=length, return_offsets=offsets
    )
    out = preprocessor(tuple(segments))
    texts = [str(x) for x in inputs]
    for key, attribute in [
        ("token_ids", "ids"),
        ("segment_ids", "type_ids"),
        ("padding_mask", "attention_mask"),
    ]:
        expected = [getattr(e, attribute) for e in reference]
        assert_same(
            keras.ops.convert_to_numpy(out[key]).tolist(),
            expected,
            texts,
            f"{key} {length}",
        )
    if offsets:
        ours = np.stack([out["offsets_start"], out["offsets_end"]], -1).tolist()
        expected = [[list(o) for o in e.offsets] for e in reference]
        assert_same(ours, expected, texts, f"offsets {length}")


@pytest.mark.parametrize("name, length", [("uncased", 32), ("cased", 33)])
def test_exact_packing_pairs(corpus, vocabularies, name, length):
    """Every corpus sentence in a pair; budgets 29 (odd) and 30 (even)."""
    vocab, lowercase = vocabularies[name], name == "uncased"
    tokenizer = BertTokenizer(vocab, lowercase=lowercase)
    segments = (corpus[0::2], corpus[1::2])
    check_packing(tokenizer, vocab, lowercase, segments, length, offsets=False)


@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_exact_packing_with_offsets(texts, vocabularies, name):
    vocab, lowercase = vocabularies[name], name == "uncased"
    tokenizer = BertTokenizer(vocab, lowercase=lowercase)
    pairs = ADVERSARIAL_PAIRS + list(zip(ADVERSARIAL, ADVERSARIAL[::-1]))
    pairs += list(zip(texts[-2000::2], texts[-2000 + 1 :: 2]))
    segments = ([p[0] for p in pairs], [p[1] for p in pairs])
    for length in PAIR_LENGTHS:
        check_packing(tokenizer, vocab, lowercase, segments, length, offsets=True)
    single = ADVERSARIAL + texts[: len(ADVERSARIAL) + 2000]
    check_packing(tokenizer, vocab, lowercase, (single,), 64, offsets=True)


def _hf_control(character):
    if character in "\t\n\r":
        return False
    return character in "\x00\ufffd" or unicodedata.category(character) in (
        "Cc",
        "Cf",
        "Co",
    )


def tflite_mismatch_kind(text, hf_normalizer, hf_pre_tokenizer, max_bytes=100):
    """Which documented TFLite-mode difference explains a mismatch."""
    if any(token in text for token in SPECIALS):
        return "literal special token"
    if any(_hf_control(c) for c in text):
        return "control/format character"
    normalized = hf_normalizer.normalize_str(text)
    words = hf_pre_tokenizer.pre_tokenize_str(normalized)
    if any(len(word.encode()) > max_bytes >= len(word) for word, _ in words):
        return "word limit in bytes"
    folded = unicodedata.normalize("NFKC", text).casefold()
    if hf_normalizer.normalize_str(folded) != normalized:
        return "NFKC case folding"
    return "unexplained"


@pytest.mark.parametrize("name", ["uncased", "cased"])
def test_tflite_mode_mismatches_are_documented(
    corpus, texts, vocabularies, hf_encodings, name
):
    cased = name == "cased"
    vocab = vocabularies[name]
    reference = ids_of(hf_encodings(name))
    tokenizer = BertTokenizer(vocab, lowercase=not cased, normalization="tflite")
    ids = ragged_lists(tokenizer(texts))
    normalizer = tokenizers.normalizers.BertNormalizer(lowercase=not cased)
    pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    kinds = {}
    for text, ours, theirs in zip(texts, ids, reference):
        if ours != theirs:
            kind = tflite_mismatch_kind(text, normalizer, pre_tokenizer)
            kinds.setdefault(kind, []).append(text)
    corpus_mismatches = sum(
        a != b for a, b in zip(ids[len(ADVERSARIAL) :], reference[len(ADVERSARIAL) :])
    )
    print(
        f"\nTFLite mode ({'cased' if cased else 'uncased'}): "
        f"{sum(map(len, kinds.values()))} of {len(texts)} texts differ from HF "
        f"({corpus_mismatches} of {len(corpus)} corpus texts, the rest of "
        f"{len(ADVERSARIAL)} adversarial ones)"
    )
    for kind, examples in sorted(kinds.items()):
        print(f"  {kind:28s} {len(examples):5d}  e.g. {examples[0][:60]!r}")
    assert "unexplained" not in kinds, kinds.get("unexplained")
    # On real text the documented differences are rare: measured 46 of 37,608
    # corpus texts uncased (NFKC case folding of Greek sigma, ligatures, ...),
    # none cased. Bound: 1 in 500 uncased, none cased.
    bound = 0 if cased else len(corpus) // 500
    assert corpus_mismatches <= bound, (corpus_mismatches, bound)
    # The adversarial set does exercise the documented differences.
    assert {"literal special token", "control/format character"} <= set(kinds)


def test_every_code_point_against_hf():
    """Each code point between two letters, uncased: where may we differ?

    Differences come only from the Unicode tables of the Rust crates behind
    `tokenizers` versus RE2/ICU inside TensorFlow. The set is pinned
    (unicode_gap.GAP, which the fuzz test leaves out; tolerance: exact) so
    that a library upgrade that changes it is noticed, and none of them may
    be a character the corpora use.
    """
    # Planes 0-3 and 14 without surrogates; the other planes are unassigned
    # (4-13) or private use (15-16), which both sides delete.
    code_points = [
        c
        for c in range(1, 0xE1000)
        if not (0xD800 <= c <= 0xDFFF or 0x32400 <= c <= 0xDFFFF)
    ]
    texts = [f"a{chr(c)}b" for c in code_points]
    hf = hf_tokenizer(UNCASED_VOCAB, lowercase=True)
    reference = ids_of(hf.encode_batch(texts, add_special_tokens=False))
    ids = ragged_lists(BertTokenizer(UNCASED_VOCAB)(texts))
    differ = [c for c, a, b in zip(code_points, ids, reference) if a != b]
    print(f"\nexact mode: {len(differ)} of {len(code_points)} code points differ")
    new = sorted(set(differ) - GAP)
    gone = sorted(GAP - set(differ))
    assert not new and not gone, ([hex(c) for c in new[:50]], [hex(c) for c in gone[:50]])
    assert len(differ) == 568
    seen = set("".join(corpus_texts()))
    assert not seen & {chr(c) for c in differ}
