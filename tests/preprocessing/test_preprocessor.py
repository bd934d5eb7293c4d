"""BertPreprocessor: packing, truncation, tf.data + fit on every backend."""

import json
import zipfile

import keras
import numpy as np
import pytest

from kbert.data import rotten_tomatoes_split
from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.preprocessing.corpus import MINILM_VOCABULARY
from tests.test_case import run_preprocessing_layer_test

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "##es", "hello", "world", "over", "lazy",
]  # fmt: skip
UNCASED_VOCAB = MINILM_VOCABULARY
CLS, SEP = 2, 3
runs_on_tensorflow_only = pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="string inputs in a functional model need the TensorFlow backend",
)


def numpy(outputs):
    return {key: keras.ops.convert_to_numpy(value) for key, value in outputs.items()}


def preprocessor(sequence_length, **kwargs):
    return BertPreprocessor(BertTokenizer(VOCAB), sequence_length, **kwargs)


def test_single_segment():
    out = numpy(preprocessor(8)(["the quick brown fox", ""]))
    np.testing.assert_array_equal(
        out["token_ids"], [[CLS, 5, 6, 7, 8, SEP, 0, 0], [CLS, SEP, 0, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(out["segment_ids"], np.zeros((2, 8)))
    np.testing.assert_array_equal(
        out["padding_mask"], [[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]
    )
    assert {value.dtype for value in out.values()} == {np.dtype("int32")}
    cut = numpy(preprocessor(4)("the quick brown fox"))  # unbatched
    np.testing.assert_array_equal(cut["token_ids"], [CLS, 5, 6, SEP])


A4 = "the quick brown fox"  # 4 tokens
A6 = "the quick brown fox over lazy"  # 6 tokens
B2 = "hello world"
B4 = "hello world over the"


@pytest.mark.parametrize(
    "length, truncation, first, second, expected_ids, expected_segments",
    [
        # longest_first: only the longer one is cut
        (8, "longest_first", A4, B2, [CLS, 5, 6, 7, SEP, 10, 11, SEP], [0] * 5 + [1] * 3),
        # odd budget (5), equal lengths: the second gets the extra token
        (8, "longest_first", A4, B4, [CLS, 5, 6, SEP, 10, 11, 12, SEP], [0] * 4 + [1] * 4),
        # even budget (6), equal lengths
        (9, "longest_first", A4, B4, [CLS, 5, 6, 7, SEP, 10, 11, 12, SEP], [0] * 5 + [1] * 4),
        # odd budget, first longer: the longer one gets the extra token
        (8, "longest_first", A6, B4, [CLS, 5, 6, 7, SEP, 10, 11, SEP], [0] * 5 + [1] * 3),
        (8, "only_first", A4, B2, [CLS, 5, 6, 7, SEP, 10, 11, SEP], [0] * 5 + [1] * 3),
        (8, "only_second", B2, A4, [CLS, 10, 11, SEP, 5, 6, 7, SEP], [0] * 4 + [1] * 4),
        # only_first when the second alone is over budget: both are cut
        (6, "only_first", B2, A4, [CLS, SEP, 5, 6, 7, SEP], [0] * 2 + [1] * 4),
        # no truncation needed: padding
        (10, "longest_first", B2, B2, [CLS, 10, 11, SEP, 10, 11, SEP, 0, 0, 0], [0] * 4 + [1] * 3 + [0] * 3),
    ],
)  # fmt: skip
def test_pairs_and_truncation(
    length, truncation, first, second, expected_ids, expected_segments
):
    out = numpy(preprocessor(length, truncation=truncation)(([first], [second])))
    np.testing.assert_array_equal(out["token_ids"], [expected_ids])
    np.testing.assert_array_equal(out["segment_ids"], [expected_segments])
    np.testing.assert_array_equal(
        out["padding_mask"], [[int(i != 0) for i in expected_ids]]
    )


def test_truncation_grid_matches_hugging_face(tmp_path):
    """All segment lengths 0..9, budgets 2..5, the three strategies."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB), encoding="utf-8")
    for strategy in ("longest_first", "only_first", "only_second"):
        for length in (5, 6, 7, 8):
            hf = tokenizers.BertWordPieceTokenizer(str(path))
            hf.enable_truncation(length, strategy=strategy)
            hf.enable_padding(length=length)
            pairs, expected, refused = [], [], []
            for n1 in range(10):
                for n2 in range(10):
                    pair = (" ".join(["the"] * n1), " ".join(["hello"] * n2))
                    try:
                        expected.append(hf.encode(*pair).ids)
                    except Exception:  # tokenizers refuses: sequence too short
                        refused.append((n1, n2))
                        continue
                    pairs.append(pair)
            # tokenizers refuses exactly the pairs whose only truncatable
            # segment would be cut to nothing or less; no other pair is left out.
            excess = {
                (n1, n2): n1 + n2 + 3 - length for n1 in range(10) for n2 in range(10)
            }
            cut = {"only_first": 0, "only_second": 1}.get(strategy)
            assert refused == [
                pair
                for pair, over in excess.items()
                if cut is not None and over > 0 and pair[cut] <= over
            ], (strategy, length)
            assert len(pairs) + len(refused) == 100
            out = preprocessor(length, truncation=strategy)(
                ([p[0] for p in pairs], [p[1] for p in pairs])
            )
            ours = keras.ops.convert_to_numpy(out["token_ids"]).tolist()
            bad = [p for p, a, b in zip(pairs, ours, expected) if a != b]
            assert not bad, (strategy, length, bad[:3])


def test_offsets():
    layer = preprocessor(9, return_offsets=True)
    out = numpy(layer((["The foxes!"], ["héllo  world"])))
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 8, 9, 1, SEP, 10, 11, SEP]])
    np.testing.assert_array_equal(out["offsets_start"], [[0, 0, 4, 7, 9, 0, 0, 7, 0]])
    np.testing.assert_array_equal(out["offsets_end"], [[0, 3, 7, 9, 10, 0, 5, 12, 0]])


@pytest.mark.parametrize(
    "bad, message",
    [
        (("a", "b", "c"), "one or two segments"),
        ((["a", "b"], ["c"]), "must hold as many strings: 2 and 1"),
        ([None], r"inputs\[0\] is None"),
        ((["a"], [b"\xff"]), r"segment 1\[0\] is not valid UTF-8"),
        ([["a", "b"]], "nested lists are not supported"),
    ],
)
def test_bad_inputs(bad, message):
    with pytest.raises(ValueError, match=message):
        preprocessor(8)(bad)


def test_bad_arguments():
    with pytest.raises(ValueError, match="needs two segments"):
        preprocessor(8, truncation="only_second")(["a"])
    with pytest.raises(ValueError, match="`truncation` must be one of"):
        preprocessor(8, truncation="longest")
    with pytest.raises(ValueError, match="no room for the 3 special tokens"):
        preprocessor(2)((["a"], ["b"]))
    with pytest.raises(ValueError, match="must be a BertTokenizer"):
        BertPreprocessor("vocab.txt")


def tiny_classifier(vocabulary_size):
    inputs = {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    x = keras.layers.Embedding(vocabulary_size, 8)(inputs["token_ids"])
    x = x + keras.layers.Embedding(2, 8)(inputs["segment_ids"])
    mask = keras.ops.expand_dims(keras.ops.cast(inputs["padding_mask"], "float32"), -1)
    pooled = keras.ops.sum(x * mask, axis=1) / keras.ops.sum(mask, axis=1)
    outputs = keras.layers.Dense(1, activation="sigmoid")(pooled)
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy")
    return model


@pytest.fixture(scope="module")
def reviews():
    texts, labels = rotten_tomatoes_split(seed=0)["train"]
    return texts[:64], np.array(labels[:64], "float32")


@pytest.mark.parametrize("pairs", [False, True], ids=["single", "pairs"])
def test_tf_data_map_feeds_fit(reviews, pairs):
    """`ds.map(preprocessor)` then `fit`, on the current Keras backend."""
    import tensorflow as tf

    texts, labels = reviews
    keras.utils.set_random_seed(0)
    layer = BertPreprocessor(BertTokenizer(UNCASED_VOCAB), sequence_length=32)
    x = (texts, texts[::-1]) if pairs else texts
    dataset = tf.data.Dataset.from_tensor_slices((x, labels)).batch(16)
    dataset = dataset.map(layer).cache()
    features, y = next(iter(dataset))
    assert features["token_ids"].shape == (16, 32) and y.shape == (16,)
    model = tiny_classifier(30522)
    history = model.fit(dataset, epochs=6, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.8 * losses[0], losses


@runs_on_tensorflow_only
def test_functional_model_on_strings_saves_and_loads(reviews, tmp_path):
    texts, labels = reviews
    layer = BertPreprocessor(BertTokenizer(UNCASED_VOCAB), sequence_length=24)
    first = keras.Input(shape=(), dtype="string")
    second = keras.Input(shape=(), dtype="string")
    model = keras.Model([first, second], tiny_classifier(30522)(layer((first, second))))
    model.compile("adam", "binary_crossentropy")
    import tensorflow as tf

    x = [tf.constant(texts), tf.constant(texts[::-1])]
    model.fit(x, labels, batch_size=16, epochs=1, verbose=0)
    expected = keras.ops.convert_to_numpy(model(x))  # eager: no retracing
    path = str(tmp_path / "model.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json").decode()
        vocab_files = [n for n in archive.namelist() if n.endswith("vocab.txt")]
    assert "##ing" not in config and len(vocab_files) == 1
    restored = keras.saving.load_model(path, compile=False)
    np.testing.assert_allclose(restored(x), expected, atol=1e-6)


def test_config_round_trip():
    layer = preprocessor(16, truncation="only_first", return_offsets=True)
    config = layer.get_config()
    json.dumps(config)
    clone = BertPreprocessor.from_config(config)
    assert (clone.sequence_length, clone.truncation) == (16, "only_first")
    assert clone.return_offsets and clone.tokenizer.get_config()["vocabulary"] is None


def test_preprocessor_harness(tmp_path):
    ids = [[CLS, 5, 8, 9, SEP, 10, 11, SEP], [CLS, 10, SEP, 12, 13, SEP, 0, 0]]
    run_preprocessing_layer_test(
        BertPreprocessor,
        {"tokenizer": BertTokenizer(VOCAB), "sequence_length": 8},
        (["the foxes", "hello"], ["hello world", "over lazy"]),
        {
            "token_ids": ids,
            "segment_ids": [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0]],
            "padding_mask": [[1] * 8, [1] * 6 + [0, 0]],
        },
        tmp_path,
    )
