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


def hf_windows_entities(model, tmp_path, text, length, stride, ignore_labels):
    """HF's "simple" token-classification entities of `text` read in
    `tokenizers`' overflowing windows (`stride` shared pieces), each piece
    scored in the window where it has the most context (min pieces before
    and after; the first such window). Pieces are told apart by their
    character offsets in `text`; the model runs window by window.
    Returns the entities and the number of windows."""
    import keras
    from tokenizers import BertWordPieceTokenizer

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    tokenizer = BertWordPieceTokenizer(str(path), lowercase=True)
    tokenizer.enable_truncation(length, stride=stride)
    encoding = tokenizer.encode(text)
    windows = [encoding] + encoding.overflowing
    best = {}  # (start, end) -> (context, piece)
    for window in windows:  # padded as `padding="max_length"` pads: one shape
        pad = [0] * (length - len(window.ids))
        features = {
            "token_ids": np.array([window.ids + pad], "int32"),
            "segment_ids": np.zeros((1, length), "int32"),
            "padding_mask": np.array([[1] * len(window.ids) + pad], "int32"),
        }
        logits = keras.ops.convert_to_numpy(model(features, training=False))[0]
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        pieces = len(window.ids) - 2
        for piece in range(pieces):
            position = 1 + piece
            context = min(piece, pieces - 1 - piece)
            span = window.offsets[position]
            if span in best and best[span][0] >= context:
                continue
            label = int(np.argmax(probabilities[position]))
            token = window.tokens[position]
            best[span] = (
                context,
                {
                    "entity": model.id2label[label],
                    "score": float(probabilities[position, label]),
                    # HF reads an unknown piece as the text it covers
                    "word": text[slice(*span)] if token == "[UNK]" else token,
                    "start": span[0],
                    "end": span[1],
                },
            )

    def bio(label):  # HF's get_tag: a label not B-/I- is its own I- tag
        return (label[0], label[2:]) if label[:2] in ("B-", "I-") else ("I", label)

    groups = []  # HF's group_entities: a B- or another tag starts an entity
    for _, piece in (best[span] for span in sorted(best)):
        bi, tag = bio(piece["entity"])
        if groups and bi != "B" and tag == bio(groups[-1][-1]["entity"])[1]:
            groups[-1].append(piece)
        else:
            groups.append([piece])
    entities = [
        {
            "entity_group": group[0]["entity"].split("-", 1)[-1],
            "score": float(np.mean([p["score"] for p in group])),
            "word": tokenizer.decoder.decode([p["word"] for p in group]),
            "start": group[0]["start"],
            "end": group[-1]["end"],
        }
        for group in groups
    ]
    entities = [e for e in entities if e["entity_group"] not in ignore_labels]
    return entities, len(windows)


def test_token_classification_reads_long_texts_in_windows(tmp_path):
    from kbert.inference.pipeline import TokenClassificationPipeline

    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model = tiny(kbert.BertTokenClassifier, num_classes=5, id2label=dict(enumerate(tags)))
    text = " ".join(TEXTS * 2)  # mixed case, an unknown word ("was"), 3 windows
    every_piece = TokenClassificationPipeline(
        model, ignore_labels=(), long_texts="windows", stride=5
    )
    tag = kbert.pipeline("ner", model, long_texts="windows", stride=5)  # ignores O
    for run, ignore_labels in [(every_piece, ()), (tag, ("O",))]:
        expected, windows = hf_windows_entities(model, tmp_path, text, 24, 5, ignore_labels)
        assert_same(run(text), expected)
        assert len(expected) >= 3
    assert windows >= 3 and expected[-1]["end"] > len(" ".join(TEXTS))
    # A text that fits one window: exactly the truncate path's entities.
    assert_same(tag(TEXTS), kbert.pipeline("ner", model)(TEXTS))


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
