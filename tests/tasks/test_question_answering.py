import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.models import qa_decoding, qa_labels, qa_windows
from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.tasks.hf_qa_reference import answer_chars, hf_pipeline_answer
from tests.tasks.tasks_helpers import (
    TOLERANCE,
    VOCABULARY,
    hf_tokenizer,
    max_abs_diff,
    quick_jit,
    random_hf_model,
    report,
    save_hf,
    write_vocabulary,
)
from tests.test_case import tiny_backbone

LONG_CONTEXT = (
    "The red fox jumps in  Paris, the big city on the river. A small dog sat on the mat "
    "in London and the cat jumped about. Ada Lovelace wrote notes about the engine "
    "that Babbage built in London; the UNSEEN river is blue and the grass is green. "
    "The sky over Paris is blue, the fox is red and the dog is small."
)
PAIRS = [
    ("Who wrote notes?", "Ada Lovelace wrote notes about the engine that Babbage built."),
    ("Where is the red fox?", LONG_CONTEXT),
    ("What color is the sky?", "The sky is blue , the grass is green."),
    ("Which unseen city?", "Paris is a big city and London is a big city too."),
]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    directory = tmp_path_factory.mktemp("qa_vocab")
    return BertTokenizer(write_vocabulary(directory)), hf_tokenizer(directory)


@pytest.mark.parametrize("length, stride", [(16, 2), (16, 6), (24, 4), (64, 16)])
def test_windows_equal_transformers_overflowing_tokens(tokenizers, length, stride):
    ours, theirs = tokenizers
    questions, contexts = zip(*PAIRS)
    windows = qa_windows.question_windows(
        ours, tf.constant(questions), tf.constant(contexts), length, stride
    )
    windows = {k: v.numpy() for k, v in windows.items()}
    encoded = theirs(
        list(questions),
        list(contexts),
        truncation="only_second",
        max_length=length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
        return_tensors="np",
    )
    np.testing.assert_array_equal(
        windows["example_index"], encoded["overflow_to_sample_mapping"]
    )
    np.testing.assert_array_equal(windows["token_ids"], encoded["input_ids"])
    np.testing.assert_array_equal(windows["segment_ids"], encoded["token_type_ids"])
    np.testing.assert_array_equal(windows["padding_mask"], encoded["attention_mask"])
    context = np.array(
        [
            [s == 1 for s in encoded.sequence_ids(i)]
            for i in range(len(encoded["input_ids"]))
        ]
    )
    np.testing.assert_array_equal(windows["context_mask"], context)
    offsets = np.where(context[..., None], encoded["offset_mapping"], 0)
    np.testing.assert_array_equal(windows["offsets_start"], offsets[..., 0])
    np.testing.assert_array_equal(windows["offsets_end"], offsets[..., 1])
    if length == 16:
        assert np.bincount(windows["example_index"])[1] > 3  # the long context


def test_doc_stride_too_large_is_an_error(tokenizers):
    with pytest.raises(tf.errors.InvalidArgumentError, match="doc_stride=11 must be less"):
        qa_windows.question_windows(
            tokenizers[0], tf.constant(["who?"]), tf.constant([LONG_CONTEXT]), 16, 11
        )


def test_cut_questions_are_counted_in_one_warning(tokenizers):
    questions = tf.constant(["who wrote the notes ?", "who ?", "who wrote ?"])
    contexts = tf.constant([LONG_CONTEXT] * 3)
    with pytest.warns(kbert.TruncationWarning) as caught:
        windows = qa_windows.question_windows(
            tokenizers[0], questions, contexts, 16, 2, max_question_length=2
        )
    (warning,) = caught
    assert (warning.message.truncated, warning.message.total) == (2, 3)
    assert "max_question_length=2" in str(warning.message)
    # [CLS], the question's first two pieces, [SEP] in every window
    assert (windows["token_ids"].numpy()[:, 3] == tokenizers[0].sep_token_id).all()


def test_answer_positions_hand_computed(tokenizers):
    # [CLS] who wrote ? [SEP] | ada love ##lace wrote | [SEP]   (window 0)
    # [CLS] who wrote ? [SEP] | wrote notes | [SEP]             (window 1, stride 1)
    windows = qa_windows.question_windows(
        tokenizers[0],
        tf.constant(["who wrote?"] * 4),
        tf.constant(["Ada Lovelace wrote notes"] * 4),
        10,
        1,
    )
    # "Lovelace", "ovelace wrote", "notes", no answer.
    starts, ends = qa_labels.answer_positions(
        windows, tf.constant([4, 5, 19, -1]), tf.constant([12, 18, 24, -1])
    )
    assert windows["example_index"].numpy().tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert starts.numpy().tolist() == [6, 0, 6, 0, 0, 6, 0, 0]
    assert ends.numpy().tolist() == [7, 0, 8, 0, 0, 6, 0, 0]


def test_word_spans_equal_tokenizers_word_to_chars(tokenizers):
    ours, theirs = tokenizers
    question, context = PAIRS[1]
    windows = qa_windows.question_windows(
        ours, tf.constant([question]), tf.constant([context]), 16, 3
    )
    windows = {k: v.numpy() for k, v in windows.items()}
    encoded = theirs(
        question,
        context,
        truncation="only_second",
        max_length=16,
        stride=3,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    flags = qa_decoding.continuation_flags(ours.get_vocabulary())
    checked = 0
    for window, enc in enumerate(encoded.encodings):
        mask = windows["context_mask"][window] > 0
        for position in np.nonzero(mask)[0]:
            first, last = qa_decoding.word_span(
                windows["token_ids"][window], mask, position, flags
            )
            ours_chars = (
                windows["offsets_start"][window][first],
                windows["offsets_end"][window][last],
            )
            assert ours_chars == answer_chars(enc, position, position, True)
            checked += 1
    assert checked > 50


def _window(start_logits, end_logits):
    # [CLS] who [SEP] ada love ##lace [SEP]  over the context "ada lovelace"
    ids = {t: i for i, t in enumerate(VOCABULARY)}
    windows = {
        "token_ids": np.array(
            [[2, ids["who"], 3, ids["ada"], ids["love"], ids["##lace"], 3]]
        ),
        "context_mask": np.array([[0, 0, 0, 1, 1, 1, 0]]),
        "offsets_start": np.array([[0, 0, 0, 0, 4, 8, 0]]),
        "offsets_end": np.array([[0, 0, 0, 3, 8, 12, 0]]),
        "example_index": np.array([0]),
    }
    return np.array([start_logits], "float32"), np.array([end_logits], "float32"), windows


def test_decoding_hand_computed():
    flags = qa_decoding.continuation_flags(VOCABULARY)
    # Question logit 9 is masked; [CLS] 2, "love" / "##lace" 3, the rest 0.
    start, end, windows = _window([2, 9, 0, 0, 3, 0, 0], [2, 9, 0, 0, 0, 3, 0])
    z = np.exp(2) + np.exp(3) + 2  # softmax over [CLS] and the context
    best = (np.exp(3) / z) ** 2
    null = (np.exp(2) / z) ** 2

    def decode(**kwargs):
        return qa_decoding.decode_answers(
            start, end, windows, ["ada lovelace"], flags, **kwargs
        )[0]

    answer = decode(align_to_words=False)[0]
    assert (answer["answer"], answer["start"], answer["end"]) == ("lovelace", 4, 12)
    assert answer["score"] == pytest.approx(best, rel=1e-5)
    # Aligned to words, (love, love), (love, ##lace) and (##lace, ##lace) all
    # read "lovelace": their scores add up, as in transformers.
    merged = decode()[0]
    assert (merged["answer"], merged["start"], merged["end"]) == ("lovelace", 4, 12)
    assert merged["score"] == pytest.approx(best + 2 * np.exp(3) / z**2, rel=1e-5)
    # The null logit sum (2 + 2) is 2 below the span's (3 + 3): no answer wins
    # once the threshold is below -2.
    exact = dict(align_to_words=False, handle_impossible_answer=True)
    assert decode(**exact)[0]["answer"] == "lovelace"
    assert decode(**exact, null_threshold=-1.9)[0]["answer"] == "lovelace"
    empty = decode(**exact, null_threshold=-2.1)[0]
    assert empty == {
        "answer": "",
        "start": 0,
        "end": 0,
        "score": pytest.approx(null, rel=1e-5),
    }
    assert [a["answer"] for a in decode(**exact, top_k=2)] == ["lovelace", ""]
    # A span can end at most max_answer_length - 1 pieces after its start.
    assert decode(max_answer_length=1)[0]["answer"] in ("lovelace", "ada")
    assert all(a["end"] - a["start"] <= 8 for a in decode(max_answer_length=1, top_k=3))

    # Starting on "##lace": words widen it to "lovelace", pieces do not.
    start, end, windows = _window([0, 0, 0, 0, 0, 4, 0], [0, 0, 0, 0, 0, 4, 0])
    assert decode(align_to_words=True)[0]["answer"] == "lovelace"
    assert decode(align_to_words=False)[0]["answer"] == "lace"


@pytest.fixture(scope="module")
def hf_qa(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_qa")
    tokenizer = hf_tokenizer(directory)
    model = random_hf_model("BertForQuestionAnswering", seed=5)
    return model, tokenizer, save_hf(model, tokenizer, directory)


CONFIGS = [
    dict(top_k=1),
    dict(top_k=3, doc_stride=8, handle_impossible_answer=True),
    dict(top_k=2, align_to_words=False, max_answer_length=4, doc_stride=12),
]


def test_answers_equal_the_transformers_pipeline(hf_qa):
    hf_model, hf_tok, directory = hf_qa
    qa = kbert.BertQuestionAnswerer.from_preset(directory, sequence_length=32)
    questions, contexts = (list(x) for x in zip(*PAIRS))
    for config in CONFIGS:
        ours = qa.answer(questions, contexts, **config)
        hf_config = {
            ("max_answer_len" if k == "max_answer_length" else k): v
            for k, v in config.items()
        }
        for index, (question, context) in enumerate(PAIRS):
            expected, outputs = hf_pipeline_answer(
                hf_model, hf_tok, question, context, max_seq_len=32, **hf_config
            )
            got = ours[index] if config["top_k"] > 1 else [ours[index]]
            assert [(a["answer"], a["start"], a["end"]) for a in got] == [
                (a["answer"], a["start"], a["end"]) for a in expected
            ], (config, index)
            np.testing.assert_allclose(
                [a["score"] for a in got],
                [a["score"] for a in expected],
                rtol=1e-3,
                atol=1e-6,
            )
            if index == 1:
                assert len(outputs) > 2  # several windows
    report(
        "BertQuestionAnswerer.answer vs transformers QA pipeline (4.57 logic)",
        f"answers equal on {len(PAIRS)} pairs x {len(CONFIGS)} configs",
    )

    # The window logits themselves: every window of every pair, in order.
    logits = keras.tree.map_structure(
        keras.ops.convert_to_numpy, qa.predict((questions, contexts), verbose=0)
    )
    windows = [
        window
        for question, context in PAIRS
        for window in hf_pipeline_answer(
            hf_model, hf_tok, question, context, max_seq_len=32
        )[1]
    ]
    assert len(windows) == len(logits["start_logits"]) > len(PAIRS)
    diff = max(
        max_abs_diff(logits[name][row, : len(window["input_ids"])], window[key][0])
        for row, window in enumerate(windows)
        for name, key in (("start_logits", "start"), ("end_logits", "end"))
    )
    report("BertQuestionAnswerer window logits vs BertForQuestionAnswering", diff)
    assert diff <= TOLERANCE


def test_trains_on_raw_questions_and_answer_spans(tokenizers):
    backbone = tiny_backbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, max_sequence_length=32, dropout=0.0
    )
    qa = kbert.BertQuestionAnswerer(
        backbone,
        preprocessor=BertPreprocessor(tokenizers[0], sequence_length=16),
        doc_stride=6,
    )
    qa.compile(optimizer=keras.optimizers.Adam(0.02), jit_compile=quick_jit())
    contexts = [
        "the red fox is in paris",
        "a dog sat in london",
        "the cat sat on the mat in paris",
        "Ada Lovelace wrote notes in London about the engine that Babbage built",
        "the sky is blue",
    ]
    questions = [
        "where is the fox?",
        "where is the dog?",
        "where is the cat?",
        "where?",
        "where?",
    ]
    starts = [
        c.lower().find(city) if city else -1
        for c, city in zip(contexts, ["paris", "london", "paris", "london", None])
    ]
    ends = [
        s + (6 if "london" in c.lower()[s : s + 6] else 5) if s >= 0 else -1
        for s, c in zip(starts, contexts)
    ]
    qa.fit(
        (questions * 20, contexts * 20),
        (starts * 20, ends * 20),
        batch_size=5,
        shuffle=False,
        verbose=0,
    )
    # Untrained, start + end cross-entropy is about 2 * log(16) = 5.5.
    results = qa.evaluate(
        (questions, contexts), (starts, ends), verbose=0, return_dict=True
    )
    assert results["loss"] < 1.0, results
    # The same pairs as a tf.data pipeline: windows made inside the graph.
    dataset = tf.data.Dataset.from_tensor_slices(((questions, contexts), (starts, ends)))
    again = qa.evaluate(dataset.batch(5), verbose=0, return_dict=True)
    assert again["loss"] == pytest.approx(results["loss"], abs=1e-5)
    answer = qa.answer("where is the dog?", "the big dog is in london")
    assert (answer["answer"], answer["start"], answer["end"]) == ("london", 18, 24)
