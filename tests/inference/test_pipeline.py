"""`kbert.pipeline` gives what `transformers.pipeline` gives on the same weights.

Each tiny kbert model gets random weights (so no tie hides a mix-up), is
written with `save_hf`, and both pipelines read the same texts: labels,
tokens and character spans equal, scores within 1e-5.
"""

import numpy as np
import pytest

import kbert
from tests.test_case import randomized

TOLERANCE = 1e-5
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "of", "and", ".", ",", "?", "ada", "love", "##lace", "wrote",
    "notes", "on", "engine", "babbage", "built", "it", "in", "london", "who",
    "what", "paris", "is", "capital", "france", "film", "fine", "dull", "##s",
    "##ly", "bad", "good", "did",
]  # fmt: skip
TEXTS = [
    "Ada Lovelace wrote notes on the engine.",
    "Babbage built it in London, and it was fine.",
    "what a dull film",
]
TINY = dict(
    vocabulary_size=len(VOCABULARY),
    num_layers=2,
    num_heads=2,
    hidden_dim=16,
    intermediate_dim=32,
    max_sequence_length=32,
)


def tiny(cls, **arguments):
    preprocessor = kbert.BertPreprocessor(
        kbert.BertTokenizer(VOCABULARY), sequence_length=24
    )
    backbone = kbert.BertBackbone(**TINY)
    return randomized(cls(backbone, preprocessor=preprocessor, **arguments), scale=0.3)


def hf_pipeline(task, model, tmp_path):
    import transformers

    directory = str(tmp_path / type(model).__name__)
    kbert.save_hf(model, directory)
    return transformers.pipeline(task, model=directory, device="cpu")


def assert_same(actual, expected):
    """Equal structures; floats (scores) within TOLERANCE, the rest exactly."""
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), (actual, expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    elif isinstance(expected, list):
        assert len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, (float, np.floating)):
        assert abs(float(actual) - float(expected)) <= TOLERANCE, (actual, expected)
    else:
        assert actual == expected, (actual, expected)


@pytest.mark.parametrize(
    "problem_type, num_classes",
    [("single_label", 3), ("multi_label", 3), ("regression", 1)],
)
def test_text_classification(problem_type, num_classes, tmp_path):
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    model = tiny(
        kbert.BertClassifier,
        num_classes=num_classes,
        problem_type=problem_type,
        id2label={i: labels[i] for i in range(num_classes)},
    )
    reference = hf_pipeline("text-classification", model, tmp_path)
    classify = kbert.pipeline("text-classification", model)
    assert_same(classify(TEXTS, top_k=None), reference(TEXTS, top_k=None))
    assert_same(classify(TEXTS), reference(TEXTS))
    assert_same(classify(TEXTS[0]), reference(TEXTS[0])[0])


def test_token_classification(tmp_path):
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model = tiny(kbert.BertTokenClassifier, num_classes=5, id2label=dict(enumerate(tags)))
    reference = hf_pipeline("token-classification", model, tmp_path)
    tag = kbert.pipeline("ner", model)
    expected = reference(TEXTS, aggregation_strategy="simple")
    assert sum(map(len, expected)) >= 3  # spans to compare
    actual = tag(TEXTS)
    assert_same(
        actual, [[{**s, "score": float(s["score"])} for s in row] for row in expected]
    )


def test_question_answering(tmp_path):
    # transformers 5 removed its QA pipeline: tests/tasks rebuilds it.
    import transformers

    from tests.tasks.hf_qa_reference import hf_pipeline_answer

    model = tiny(kbert.BertQuestionAnswerer)
    directory = str(tmp_path / "qa")
    kbert.save_hf(model, directory)
    reference = transformers.BertForQuestionAnswering.from_pretrained(directory).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    ask = kbert.pipeline("question-answering", model)
    questions = ["Who wrote notes?", "What is the capital of France?"]
    contexts = [TEXTS[0], "Paris is the capital of France, and it is fine."]
    expected = [
        hf_pipeline_answer(reference, tokenizer, q, c, max_seq_len=24)[0][0]
        for q, c in zip(questions, contexts)
    ]
    assert_same(ask(question=questions, context=contexts), expected)


def test_fill_mask(tmp_path):
    model = tiny(kbert.BertMaskedLM)
    reference = hf_pipeline("fill-mask", model, tmp_path)
    fill = kbert.pipeline("fill-mask", model)
    texts = ["Ada [MASK] wrote notes.", "Paris is the [MASK] of France."]
    assert_same(fill(texts, top_k=4), reference(texts, top_k=4))
    two_masks = "[MASK] is the [MASK] of France."
    assert_same(fill(two_masks, top_k=2), reference(two_masks, top_k=2))
    with pytest.raises(ValueError, match="has no \\[MASK\\]"):
        fill("no mask here")


def test_embeddings(tmp_path):
    model = tiny(kbert.BertTextEmbedder)
    reference = hf_pipeline("feature-extraction", model, tmp_path)
    tokens = kbert.pipeline("feature-extraction", model)(TEXTS)
    expected = [np.asarray(row[0]) for row in reference(TEXTS)]
    for actual, hf_tokens in zip(tokens, expected):
        np.testing.assert_allclose(actual, hf_tokens, atol=TOLERANCE, rtol=0)
    vectors = kbert.pipeline("sentence-embeddings", model)(TEXTS)
    pooled = np.stack([row.mean(axis=0) for row in expected])
    pooled /= np.linalg.norm(pooled, axis=-1, keepdims=True)
    np.testing.assert_allclose(vectors, pooled, atol=TOLERANCE, rtol=0)
    assert kbert.pipeline("sentence-embeddings", model)(TEXTS[0]).shape == (16,)


def test_bad_requests():
    model = tiny(kbert.BertMaskedLM)
    with pytest.raises(ValueError, match="Unknown pipeline task 'translation'"):
        kbert.pipeline("translation", model)
    with pytest.raises(ValueError, match="runs a BertClassifier; got a BertMaskedLM"):
        kbert.pipeline("text-classification", model)
    with pytest.raises(ValueError, match="input 1 is int"):
        kbert.pipeline("fill-mask", model)(["a [MASK]", 3])
