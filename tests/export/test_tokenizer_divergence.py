"""Tokenizer divergence on accented/mobile text, against Hugging Face
`tokenizers` configured as each side tokenizes (every backend)."""

import warnings

import pytest
import tensorflow as tf
import tokenizers

from kbert.export.checks import (
    DIVERGENCE_TEXTS,
    TokenizerDivergenceWarning,
    describe,
    tokenizer_divergence,
    warn_on_divergence,
)
from kbert.export.tflite.inputs import deployment_preprocessor
from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.export.export_helpers import preprocessor, vocabulary

ACCENTED = list("àáåçèéëïñöûüâ")


def accented_vocabulary():
    tokens = vocabulary()
    for letter in ACCENTED:
        tokens += [letter, "##" + letter]
    return tokens


def hf(vocab, strip_accents):
    index = {token: i for i, token in enumerate(vocab)}
    return tokenizers.BertWordPieceTokenizer(
        index, lowercase=True, strip_accents=strip_accents
    )


def as_tokens(tokenizer, vocab, texts):
    return [
        [vocab[i] for i in e.ids]
        for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)
    ]


def test_normalization_mediapipe_tokenizes_as_lowercase_keeping_accents():
    vocab = accented_vocabulary()
    kbert_tokens = tokenizer_divergence(
        BertTokenizer(vocab, normalization="mediapipe"),
        BertTokenizer(vocab, lowercase=True, strip_accents=False),
        "reference",
    )
    assert kbert_tokens["agreement"] == 1.0 and kbert_tokens["characters"] == []
    # Against the reference: HF with strip_accents=False.
    tokenizer = BertTokenizer(vocab, normalization="mediapipe")
    ids = tokenizer.tokenize_tensor(tf.constant(DIVERGENCE_TEXTS))
    got = [[vocab[i] for i in row] for row in ids.to_list()]
    assert got == as_tokens(hf(vocab, False), vocab, DIVERGENCE_TEXTS)


def test_uncased_model_against_mediapipe_names_the_accented_characters():
    vocab = accented_vocabulary()
    own = BertPreprocessor(BertTokenizer(vocab), sequence_length=24)  # strips accents
    served, name = deployment_preprocessor(own, "mediapipe")
    entry = tokenizer_divergence(own.tokenizer, served.tokenizer, name)

    # Reference: HF tokenizers with and without accent stripping.
    stripped = as_tokens(hf(vocab, True), vocab, DIVERGENCE_TEXTS)
    kept = as_tokens(hf(vocab, False), vocab, DIVERGENCE_TEXTS)
    same = sum(a == b for a, b in zip(stripped, kept))
    assert 0 < same < len(DIVERGENCE_TEXTS)
    assert (entry["same"], entry["texts"]) == (same, len(DIVERGENCE_TEXTS))
    assert entry["agreement"] == same / len(DIVERGENCE_TEXTS)
    # The characters of the differing sentences that differ alone too.
    differing = [t for t, a, b in zip(DIVERGENCE_TEXTS, stripped, kept) if a != b]
    chars = sorted({c for t in differing for c in t if not c.isspace()})
    alone = zip(
        chars,
        as_tokens(hf(vocab, True), vocab, chars),
        as_tokens(hf(vocab, False), vocab, chars),
    )
    expected = [c for c, a, b in alone if a != b]
    assert entry["characters"] == expected and "é" in expected
    assert entry["example"]["model"] == stripped[0]
    assert entry["example"]["deployment"] == kept[0]

    with pytest.warns(TokenizerDivergenceWarning) as caught:
        warn_on_divergence(entry, "Fine-tune with normalization='mediapipe'.")
    message = str(caught[0].message)
    assert "MediaPipe's tokenizer differs" in message
    assert all(repr(c) in message for c in expected)
    assert "'é'" in describe(entry)


def test_trained_as_served_has_no_divergence():
    own = preprocessor(normalization="mediapipe")
    served, _ = deployment_preprocessor(own, "mediapipe")
    entry = tokenizer_divergence(own.tokenizer, served.tokenizer, "MediaPipe")
    assert entry["agreement"] == 1.0 and "example" not in entry
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_on_divergence(entry, "")
    assert describe(entry).startswith(f"{len(DIVERGENCE_TEXTS)}/{len(DIVERGENCE_TEXTS)}")
