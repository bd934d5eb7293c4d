"""Sentence-pair instances for next-sentence prediction, built from documents.

This follows `create_instances_from_document` of the original BERT
`create_pretraining_data.py`: sentences of a document are gathered into a
chunk up to a target length (shorter with probability `short_seq_prob`), the
chunk is cut into segment A and B at a random sentence boundary, and half of
the time B is replaced by a run of sentences from another document. The pair
is then truncated to `max_seq_length - 3` tokens, removing tokens at random
from the front or back of the longer segment.

One deliberate difference: the original forces a "random next" label for
every chunk of a single sentence, which skews the labels (typically 52-55%
random). Here the label is a fair coin; when the coin says "actual next" and
the chunk holds one sentence, the next sentence of the document is pulled in,
or, at the end of the document, the sentence is split at a random token.
"""

import dataclasses


@dataclasses.dataclass
class PairInstance:
    """`[CLS] A [SEP] B [SEP]` as token ids, before masking.

    Example:
    >>> PairInstance([2, 7, 3, 8, 3], [0, 0, 0, 1, 1], is_random_next=False).segment_ids
    [0, 0, 0, 1, 1]
    """

    token_ids: list
    segment_ids: list
    is_random_next: bool


def truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncates a pair in place to `max_num_tokens`, as the original does.

    Removes one token at a time from the longer segment, from its front or
    back at random (so the model does not learn that sequences end cleanly).

    Example:
    >>> import random
    >>> a, b = list(range(10)), [20, 21]
    >>> truncate_pair(a, b, 8, random.Random(0))
    >>> len(a), b
    (6, [20, 21])
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def create_pair_instances(
    document,
    other_documents,
    rng,
    cls_id,
    sep_id,
    max_seq_length=128,
    short_seq_prob=0.1,
):
    """Turns one document into `PairInstance`s.

    Args:
        document: list of sentences, each a list of token ids.
        other_documents: a sequence of other documents (same form) to draw
            random B segments from; must not contain `document`. When empty,
            every pair is an actual-next pair.
        rng: a `random.Random`.

    Example:
    >>> import random
    >>> doc = [[5, 6, 7], [8, 9], [10, 11, 12]]
    >>> instances = create_pair_instances(doc, [[[20, 21]]], random.Random(0),
    ...                                   cls_id=2, sep_id=3, max_seq_length=16)
    >>> instances[0].token_ids[0], instances[0].token_ids[-1]
    (2, 3)
    """
    max_num_tokens = max_seq_length - 3
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)

    instances = []
    chunk = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_length:
            is_random_next = bool(other_documents) and rng.random() < 0.5
            if not is_random_next and len(chunk) == 1 and i + 1 < len(document):
                # A real next pair needs two sentences: take the following one.
                i += 1
                chunk.append(document[i])
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
                tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
                rest = [t for sentence in chunk[a_end:] for t in sentence]
            else:
                a_end = 1
                tokens_a, rest = list(chunk[0]), []
            if is_random_next:
                tokens_b = _random_segment(
                    other_documents, rng, max(1, target_length - len(tokens_a))
                )
                # The unused sentences go back to the document for the next chunk.
                i -= len(chunk) - a_end
            elif rest:
                tokens_b = rest
            elif len(tokens_a) >= 2:
                # A lone final sentence: B is its own continuation.
                cut = rng.randint(1, len(tokens_a) - 1)
                tokens_a, tokens_b = tokens_a[:cut], tokens_a[cut:]
            else:
                tokens_b = []
            truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append(
                    PairInstance(
                        token_ids=[cls_id, *tokens_a, sep_id, *tokens_b, sep_id],
                        segment_ids=[0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1),
                        is_random_next=is_random_next,
                    )
                )
            chunk = []
            chunk_length = 0
        i += 1
    return instances


def _random_segment(documents, rng, target_length):
    document = documents[rng.randrange(len(documents))]
    tokens = []
    for sentence in document[rng.randrange(len(document)) :]:
        tokens.extend(sentence)
        if len(tokens) >= target_length:
            break
    return tokens
