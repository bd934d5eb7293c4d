"""BertTokenizer on a small hand-checked vocabulary, on every backend."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.preprocessing import BertTokenizer
from tests.test_case import ragged_lists, run_preprocessing_layer_test

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "##es", "jump", "##ed", "over", "!", ",",
    "cafe", "Café", "The", "日", "本", "hello", "world", "[", "]", "mask",
]  # fmt: skip
ID = {token: i for i, token in enumerate(VOCAB)}


def tokens(ids):
    return [[VOCAB[i] for i in row] for row in ids]


@pytest.mark.parametrize("normalization", ["exact", "tflite"])
def test_uncased(normalization):
    tokenizer = BertTokenizer(VOCAB, normalization=normalization)
    ids = ragged_lists(tokenizer(["The quick brown foxes jumped!", "CAFÉ 日本", ""]))
    assert tokens(ids) == [
        ["the", "quick", "brown", "fox", "##es", "jump", "##ed", "!"],
        ["cafe", "日", "本"],
        [],
    ]


def test_cased():
    tokenizer = BertTokenizer(VOCAB, lowercase=False)
    ids = ragged_lists(tokenizer(["The Café", "the cafe THE"]))
    assert tokens(ids) == [["The", "Café"], ["the", "cafe", "[UNK]"]]


def test_unbatched_and_array_inputs():
    tokenizer = BertTokenizer(VOCAB)
    expected = [ID["hello"], ID["world"]]
    single = tokenizer("Hello world")  # unbatched: a dense backend tensor
    assert keras.ops.convert_to_numpy(single).tolist() == expected
    assert ragged_lists(tokenizer(np.array(["Hello world"]))) == [expected]
    assert ragged_lists(tokenizer(np.array([b"Hello world"], dtype=object))) == [expected]


def test_literal_special_tokens_and_long_words():
    tokenizer = BertTokenizer(VOCAB)
    ids = ragged_lists(tokenizer(["hello [MASK] world[SEP]", "hello [mask]", "x" * 101]))
    assert tokens(ids) == [
        ["hello", "[MASK]", "world", "[SEP]"],
        ["hello", "[", "mask", "]"],
        ["[UNK]"],
    ]


def test_offsets_are_characters_of_the_input():
    text = "The CAFÉ, [MASK] foxes!\u200b"
    tokenizer = BertTokenizer(VOCAB)
    ids, starts, ends = (ragged_lists(x) for x in tokenizer.tokenize_with_offsets([text]))
    assert tokens(ids) == [["the", "cafe", ",", "[MASK]", "fox", "##es", "!"]]
    spans = [text[s:e] for s, e in zip(starts[0], ends[0])]
    assert spans == ["The", "CAFÉ", ",", "[MASK]", "fox", "es", "!"]


def test_tflite_offsets():
    text = "Éa the foxes"
    tokenizer = BertTokenizer(VOCAB, normalization="tflite")
    ids, starts, ends = (ragged_lists(x) for x in tokenizer.tokenize_with_offsets([text]))
    assert tokens(ids) == [["[UNK]", "the", "fox", "##es"]]
    assert list(zip(starts[0], ends[0])) == [(0, 2), (3, 6), (7, 10), (10, 12)]


def test_vocabulary_accessors_and_detokenize():
    tokenizer = BertTokenizer(VOCAB)
    assert tokenizer.vocabulary_size() == len(VOCAB)
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id) == (2, 3)
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id) == (0, 1)
    assert tokenizer.mask_token_id == 4
    assert tokenizer.id_to_token(8) == "fox" and tokenizer.token_to_id("fox") == 8
    ids = [ID["the"], ID["fox"], ID["##es"], 0, 0]
    assert tokenizer.detokenize(ids) == "the foxes"
    assert tokenizer.detokenize([ids, [ID["hello"]]]) == ["the foxes", "hello"]
    no_mask = BertTokenizer([t for t in VOCAB if t != "[MASK]"])
    assert no_mask.mask_token_id is None


def test_config_holds_no_vocabulary_and_assets_restore_it(tmp_path):
    tokenizer = BertTokenizer(VOCAB, lowercase=False, normalization="exact")
    config = tokenizer.get_config()
    assert config["vocabulary"] is None
    assert config["lowercase"] is False and config["normalization"] == "exact"
    tokenizer.save_assets(str(tmp_path))
    with open(tmp_path / "vocab.txt", encoding="utf-8") as file:
        assert file.read().splitlines() == VOCAB
    restored = BertTokenizer.from_config(config)
    with pytest.raises(ValueError, match="no vocabulary"):
        restored(["The Café"])
    restored.load_assets(str(tmp_path))
    assert ragged_lists(restored(["The Café"])) == [[ID["The"], ID["Café"]]]
    tflite = BertTokenizer.from_config(
        BertTokenizer(VOCAB, normalization="tflite").get_config()
    )
    assert tflite.normalization == "tflite"


def test_vocabulary_file_path(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(path))
    assert tokenizer.get_vocabulary() == VOCAB


@pytest.mark.parametrize(
    "bad, message",
    [
        ([None], r"inputs\[0\] is None"),
        (["ok", 3], r"inputs\[1\] is int 3; expected a string"),
        ([["nested"]], "nested lists are not supported"),
        ([b"ok", b"\xff\xfe bad"], r"inputs\[1\] is not valid UTF-8"),
        (None, "must be a string, a list of strings"),
        (3.5, "must be a string, a list of strings"),
        (np.array([1, 2]), "must be strings; received an array of int64"),
        (np.array([["a", "b"]]), r"must be 1-D"),
    ],
)
def test_bad_inputs(bad, message):
    tokenizer = BertTokenizer(VOCAB)
    with pytest.raises(ValueError, match=message):
        tokenizer(bad)


def test_bad_vocabularies_and_arguments():
    with pytest.raises(ValueError, match=r"no \[CLS\], \[SEP\]"):
        BertTokenizer(["[PAD]", "[UNK]", "a"])
    with pytest.raises(ValueError, match=r"no \[UNK\]"):
        BertTokenizer(["[PAD]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(ValueError, match="Duplicate"):
        BertTokenizer(VOCAB + ["fox"])
    with pytest.raises(ValueError, match="non-empty string"):
        BertTokenizer(VOCAB + [""])
    with pytest.raises(ValueError, match="file not found"):
        BertTokenizer("/nonexistent/vocab.txt")
    with pytest.raises(ValueError, match="`normalization` must be one of"):
        BertTokenizer(VOCAB, normalization="fast")
    with pytest.raises(ValueError, match="lowercases and strips accents together"):
        BertTokenizer(VOCAB, lowercase=True, strip_accents=False, normalization="tflite")


def test_inside_tf_function_and_tf_data():
    import tensorflow as tf

    tokenizer = BertTokenizer(VOCAB)
    texts = ["The foxes", "hello world"]
    expected = [[ID["the"], ID["fox"], ID["##es"]], [ID["hello"], ID["world"]]]
    graph = tf.function(lambda x: tokenizer(x).to_tensor())
    assert graph(tf.constant(texts)).numpy().tolist() == [expected[0], expected[1] + [0]]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(tokenizer)
    assert next(iter(dataset)).to_list() == expected


@pytest.mark.backend_independent
def test_invalid_utf8_in_a_graph_fails():
    import tensorflow as tf

    tokenizer = BertTokenizer(VOCAB)
    graph = tf.function(lambda x: tokenizer(x).flat_values)
    with pytest.raises(tf.errors.InvalidArgumentError):
        graph(tf.constant([b"\xff bad"]))


@pytest.mark.backend_independent
def test_import_does_not_load_tensorflow_on_jax():
    code = (
        "import sys, kbert, kbert.preprocessing, kbert.data; "
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    )
    env = dict(os.environ, KERAS_BACKEND="jax")
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("normalization", ["exact", "tflite"])
def test_tokenizer_harness(normalization, tmp_path):
    run_preprocessing_layer_test(
        BertTokenizer,
        {"vocabulary": VOCAB, "normalization": normalization},
        ["The quick brown foxes jumped", "hello world !"],
        [[ID["the"], ID["quick"], ID["brown"], ID["fox"], ID["##es"], ID["jump"], ID["##ed"]],
         [ID["hello"], ID["world"], ID["!"]]],
        tmp_path,
    )  # fmt: skip
