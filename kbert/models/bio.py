"""BIO tags per word -> entity spans with character offsets."""

OUTSIDE = "O"


def word_offsets(text, words):
    """`(start, end)` character offsets of each word, found left to right.

    Example:
    >>> word_offsets("Ada  Lovelace wrote", ["Ada", "Lovelace", "wrote"])
    [(0, 3), (5, 13), (14, 19)]
    """
    offsets, position = [], 0
    for word in words:
        start = text.find(word, position)
        if start < 0:
            raise ValueError(
                f"Word {word!r} is not in the text after character {position}."
            )
        position = start + len(word)
        offsets.append((start, position))
    return offsets


def _split_tag(tag):
    if tag is None or tag == OUTSIDE:
        return None, None
    prefix, _, entity = str(tag).partition("-")
    if prefix not in ("B", "I") or not entity:
        raise ValueError(f"Tag {tag!r} is not BIO: expected 'O', 'B-<type>' or 'I-<type>'.")
    return prefix, entity


def bio_to_spans(text, words, tags):
    """Entity spans from one BIO tag per word.

    An entity starts at `B-X`, or at an `I-X` that does not continue an
    `X` entity (seqeval's default, lenient reading), and runs over the
    following `I-X` words. `None` tags (words the model never saw, e.g.
    truncated) count as `O`.

    Args:
        text: the sentence the words come from.
        words: the words (found in `text` left to right), or their
            `(start, end)` character offsets.
        tags: one tag per word, e.g. `["B-PER", "I-PER", "O"]`.

    Returns:
        A list of `{"entity", "start", "end", "text"}` dicts; `end` is
        exclusive, `text[start:end] == span["text"]`.

    Example:
    >>> bio_to_spans("Ada Lovelace met Babbage", ["Ada", "Lovelace", "met", "Babbage"],
    ...              ["B-PER", "I-PER", "O", "B-PER"])
    [{'entity': 'PER', 'start': 0, 'end': 12, 'text': 'Ada Lovelace'},
     {'entity': 'PER', 'start': 17, 'end': 24, 'text': 'Babbage'}]
    """
    words, tags = list(words), list(tags)
    if len(words) != len(tags):
        raise ValueError(f"{len(words)} words but {len(tags)} tags.")
    if words and isinstance(words[0], str):
        offsets = word_offsets(text, words)
    else:
        offsets = [(int(start), int(end)) for start, end in words]
    spans, current = [], None
    for (start, end), tag in zip(offsets, tags):
        prefix, entity = _split_tag(tag)
        if prefix == "I" and current is not None and current["entity"] == entity:
            current["end"] = end
            continue
        if current is not None:
            spans.append(current)
        current = None if entity is None else {"entity": entity, "start": start, "end": end}
    if current is not None:
        spans.append(current)
    for span in spans:
        span["text"] = text[span["start"] : span["end"]]
    return spans
