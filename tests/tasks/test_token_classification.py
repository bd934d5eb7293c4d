import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.models import token_alignment
from kbert.models.token_accuracy import TokenAccuracy
from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.tasks.tasks_helpers import (
    TOLERANCE,
    VOCABULARY,
    hf_logits,
    hf_tokenizer,
    max_abs_diff,
    quick_jit,
    random_hf_model,
    report,
    save_hf,
    write_vocabulary,
)
from tests.test_case import tiny_backbone

ID = {token: i for i, token in enumerate(VOCABULARY)}
LABELS = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC"}
CLS, SEP, PAD, UNK = 2, 3, 0, 1
X = -100


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return BertTokenizer(write_vocabulary(tmp_path_factory.mktemp("vocab")))


def test_word_labels_go_on_first_pieces_hand_computed(tokenizer):
    text = "Ada Lovelace wrote, unseen"  # ada | love ##lace | wrote , | [UNK]
    out = token_alignment.align_words(
        tokenizer, tf.constant([text, ""]), 10, tf.constant([[1, 2, 0, 3], [X] * 4])
    )
    out = {k: v.numpy().tolist() for k, v in out.items()}
    ada, love, lace, wrote, comma = (ID[t] for t in ("ada", "love", "##lace", "wrote", ","))
    assert out["token_ids"] == [
        [CLS, ada, love, lace, wrote, comma, UNK, SEP, PAD, PAD],
        [CLS, SEP] + [PAD] * 8,
    ]
    assert out["word_ids"][0] == [-1, 0, 1, 1, 2, 2, 3, -1, -1, -1]
    assert out["first_piece"][0] == [0, 1, 1, 0, 1, 0, 1, 0, 0, 0]
    assert out["labels"] == [[X, 1, 2, X, 0, X, 3, X, X, X], [X] * 10]
    assert out["padding_mask"][0] == [1] * 8 + [0] * 2
    assert out["segment_ids"] == [[0] * 10] * 2

    # Truncated to 6: the last words lose their pieces and their labels.
    short = token_alignment.align_words(
        tokenizer, tf.constant([text]), 6, tf.constant([[1, 2, 0, 3]])
    )
    assert short["token_ids"].numpy().tolist() == [[CLS, ada, love, lace, wrote, SEP]]
    assert short["labels"].numpy().tolist() == [[X, 1, 2, X, 0, X]]


def test_word_inputs_and_label_padding():
    assert token_alignment.texts_from_words([["Ada", "wrote"], "a  b"]) == [
        "Ada wrote",
        "a  b",
    ]
    padded = token_alignment.pad_word_labels(
        [["B-PER", "O"], [3]], ["Ada wrote", "x"], {"O": 0, "B-PER": 1}
    )
    np.testing.assert_array_equal(padded, [[1, 0], [3, X]])
    with pytest.raises(ValueError, match="2 words but 1 labels"):
        token_alignment.pad_word_labels([[1]], ["Ada wrote"])
    with pytest.raises(ValueError, match="no whitespace"):
        token_alignment.texts_from_words([["Ada Lovelace"]])
    tricky = "a\u00a0b  c\td\ve\u2003f\n"
    expected = [
        w.decode() for w in token_alignment.split_words(tf.constant([tricky])).to_list()[0]
    ]
    assert (
        token_alignment.split_words_py(tricky)
        == expected
        == ["a\u00a0b", "c", "d", "e\u2003f"]
    )


def test_token_accuracy_ignores_minus_100():
    metric = TokenAccuracy()
    logits = np.array([[[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    metric.update_state(np.array([[1, X, 1, X]]), logits)
    assert float(metric.result()) == pytest.approx(0.5)  # 1 right of 2 labelled
    metric.update_state(np.array([[1, 1, 1, 1]]), logits, sample_weight=np.array([0.0]))
    assert float(metric.result()) == pytest.approx(0.5)


@pytest.fixture(scope="module")
def hf_tagger(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_tagger")
    tokenizer = hf_tokenizer(directory)
    model = random_hf_model(
        "BertForTokenClassification",
        seed=3,
        num_labels=4,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )
    return model, tokenizer, save_hf(model, tokenizer, directory)


def test_words_logits_and_labels_match_transformers(hf_tagger):
    hf_model, hf_tok, directory = hf_tagger
    tagger = kbert.BertTokenClassifier.from_preset(directory, sequence_length=16)
    assert tagger.id2label == LABELS
    words = [
        ["Ada", "Lovelace", "wrote", "notes,", "about", "the", "engine."],
        ["Paris", "is", "a", "big", "city"],
        ["the", "cat", "sat"],  # 4 rows: predict and predict_words share a shape
        [
            "unseen",
            "jumps",
            "jumped",
            "in",
            "London",
            "and",
            "Paris",
            "on",
            "the",
            "river",
            "again",
            "and",
            "again",
        ],
    ]
    encoded = hf_tok(
        words,
        is_split_into_words=True,
        truncation=True,
        max_length=16,
        padding="max_length",
        return_tensors="np",
    )
    ours = token_alignment.align_words(
        tagger.preprocessor.tokenizer, tf.constant([" ".join(w) for w in words]), 16
    )
    np.testing.assert_array_equal(ours["token_ids"].numpy(), encoded["input_ids"])
    hf_word_ids = [[-1 if w is None else w for w in encoded.word_ids(i)] for i in range(4)]
    np.testing.assert_array_equal(ours["word_ids"].numpy(), hf_word_ids)

    logits = keras.ops.convert_to_numpy(tagger.predict(words, verbose=0))
    reference = hf_logits(hf_model, encoded).logits.numpy()
    mask = encoded["attention_mask"].astype(bool)
    diff = max_abs_diff(logits[mask], reference[mask])
    report("BertTokenClassifier logits on raw words vs BertForTokenClassification", diff)
    assert diff <= TOLERANCE

    # Word-level predictions: the first piece's argmax, None when truncated.
    predicted = tagger.predict_words(words)
    for row, labels in enumerate(predicted):
        expected = [None] * len(words[row])
        for position, word in enumerate(hf_word_ids[row]):
            if word >= 0 and (position == 0 or hf_word_ids[row][position - 1] != word):
                expected[word] = LABELS[int(reference[row, position].argmax())]
        assert labels == expected
    assert predicted[3][-1] is None  # "again" is past the 16 tokens


def test_overfits_a_tagging_pattern_and_decodes_entities(tokenizer):
    backbone = tiny_backbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, max_sequence_length=32, dropout=0.0
    )
    tagger = kbert.BertTokenClassifier(
        backbone,
        num_classes=4,
        dropout=0.0,
        id2label=LABELS,
        preprocessor=BertPreprocessor(tokenizer, sequence_length=16),
    )
    tagger.compile(
        optimizer=keras.optimizers.Adam(0.005, global_clipnorm=1.0), jit_compile=quick_jit()
    )
    texts = [
        "Ada Lovelace wrote notes in London",
        "Babbage built the engine in London",
        "the cat sat in Paris",
        "Ada Lovelace is in Paris",
        "a red fox jumps in London",
        "Babbage wrote about Paris",
    ]
    tags = {
        "ada": "B-PER",
        "lovelace": "I-PER",
        "babbage": "B-PER",
        "london": "B-LOC",
        "paris": "B-LOC",
    }
    labels = [[tags.get(w.lower(), "O") for w in t.split()] for t in texts]
    # One epoch over repeated data: 50 steps without 50 epochs' overhead.
    tagger.fit(texts * 50, labels * 50, batch_size=6, shuffle=False, verbose=0)
    loss, accuracy = tagger.evaluate(texts, labels, verbose=0)
    assert accuracy == 1.0 and loss < 0.2, (loss, accuracy)
    # A tf.data pipeline of (texts, word labels padded with -100) agrees.
    padded = token_alignment.pad_word_labels(labels, texts, tagger.label2id)
    dataset = tf.data.Dataset.from_tensor_slices((texts, padded)).batch(6)
    np.testing.assert_allclose(
        tagger.evaluate(dataset, verbose=0), [loss, accuracy], atol=1e-6
    )
    assert tagger.predict_words(texts[:2]) == labels[:2]
    # Training sentences with extra spaces: same words, shifted offsets.
    spaced = ["Ada  Lovelace is in Paris", "Babbage wrote about  Paris"]
    assert tagger.predict_entities(spaced) == [
        [
            {"entity": "PER", "start": 0, "end": 13, "text": "Ada  Lovelace"},
            {"entity": "LOC", "start": 20, "end": 25, "text": "Paris"},
        ],
        [
            {"entity": "PER", "start": 0, "end": 7, "text": "Babbage"},
            {"entity": "LOC", "start": 21, "end": 26, "text": "Paris"},
        ],
    ]
