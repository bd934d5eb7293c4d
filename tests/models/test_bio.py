import pytest

from kbert.models.bio import bio_to_spans, word_offsets

TEXT = "Ada Lovelace met  Charles Babbage in London ."
WORDS = ["Ada", "Lovelace", "met", "Charles", "Babbage", "in", "London", "."]


def test_word_offsets_follow_the_text_and_its_extra_spaces():
    assert word_offsets(TEXT, WORDS) == [
        (0, 3),
        (4, 12),
        (13, 16),
        (18, 25),
        (26, 33),
        (34, 36),
        (37, 43),
        (44, 45),
    ]
    with pytest.raises(ValueError, match="not in the text"):
        word_offsets("Ada wrote", ["Ada", "read"])


def test_bio_spans_with_character_offsets():
    tags = ["B-PER", "I-PER", "O", "B-PER", "I-PER", "O", "B-LOC", "O"]
    assert bio_to_spans(TEXT, WORDS, tags) == [
        {"entity": "PER", "start": 0, "end": 12, "text": "Ada Lovelace"},
        {"entity": "PER", "start": 18, "end": 33, "text": "Charles Babbage"},
        {"entity": "LOC", "start": 37, "end": 43, "text": "London"},
    ]


def test_adjacent_b_tags_split_and_stray_i_tags_start_entities():
    words = ["a", "b", "c", "d", "e", "f"]
    text = " ".join(words)
    tags = ["B-X", "B-X", "I-Y", "I-Y", "O", "I-X"]
    spans = bio_to_spans(text, words, tags)
    assert [(s["entity"], s["text"]) for s in spans] == [
        ("X", "a"),
        ("X", "b"),
        ("Y", "c d"),
        ("X", "f"),
    ]


def test_offsets_instead_of_words_and_none_tags():
    spans = bio_to_spans("xx yy zz", [(0, 2), (3, 5), (6, 8)], ["B-A", None, "I-A"])
    assert spans == [
        {"entity": "A", "start": 0, "end": 2, "text": "xx"},
        {"entity": "A", "start": 6, "end": 8, "text": "zz"},
    ]


def test_bad_tags_and_lengths_are_errors():
    with pytest.raises(ValueError, match="not BIO"):
        bio_to_spans("a", ["a"], ["PER"])
    with pytest.raises(ValueError, match="1 words but 2 tags"):
        bio_to_spans("a", ["a"], ["O", "O"])
