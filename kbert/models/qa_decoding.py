"""Start/end logits of QA windows -> n-best answer texts with character offsets.

Follows the conventions of Hugging Face's question-answering pipeline
(transformers 4.x `QuestionAnsweringPipeline.postprocess`), so that the
same logits give the same answers:

- per window, logits outside the context are set to -10000 (question,
  special tokens, padding; `[CLS]` stays), then softmaxed; a span scores
  `p_start * p_end`, its end at most `max_answer_length - 1` pieces after its
  start;
- the no-answer score is the smallest `p_start[CLS] * p_end[CLS]` over the
  windows of a pair (SQuAD 2.0's "null" score, as a probability);
- each window offers its `top_k` best spans (`2 * top_k + 10` when aligning
  to words, since some merge); a span becomes the character range of the
  words its first and last pieces belong to; spans with the same text
  (ignoring case) add their scores; the best `top_k` are returned.

One deliberate difference: spans that score exactly 0 (a start or end outside
the context, which Hugging Face can return when a window has fewer spans than
candidates asked for) are never returned.
"""

import numpy as np

MASKED_LOGIT = -10000.0


def continuation_flags(vocabulary):
    """A boolean per token id: does the piece continue a word (`##...`)?

    Example:
    >>> continuation_flags(["[CLS]", "fox", "##es"]).tolist()
    [False, False, True]
    """
    return np.array([token.startswith("##") for token in vocabulary], dtype=bool)


def _softmax(logits):
    exps = np.exp(logits - logits.max())
    return exps / exps.sum()


def window_spans(start_logits, end_logits, context_mask, top_k, max_answer_length):
    """The best spans of one window and its no-answer score.

    Args:
        start_logits, end_logits: float `(sequence,)` logits of the window.
        context_mask: bool `(sequence,)`, true on context pieces.
        top_k: how many spans to return.
        max_answer_length: longest span, in pieces.

    Returns:
        `(spans, null_score)`: a list of `(start, end, score)` token spans, best
        first, and `p_start[0] * p_end[0]`.

    Example:
    >>> window_spans(np.array([0., 5., 1.]), np.array([0., 1., 5.]),
    ...              np.array([False, True, True]), 1, 15)[0]
    [(1, 2, 0.95...)]
    """
    context_mask = np.asarray(context_mask, bool)
    allowed = context_mask.copy()
    allowed[0] = True  # [CLS]: the no-answer position
    start = _softmax(np.where(allowed, start_logits, MASKED_LOGIT).astype("float64"))
    end = _softmax(np.where(allowed, end_logits, MASKED_LOGIT).astype("float64"))
    null_score = float(start[0] * end[0])
    length = len(context_mask)
    offsets = np.arange(length)
    distance = offsets[None, :] - offsets[:, None]
    valid = (
        context_mask[:, None]
        & context_mask[None, :]
        & (distance >= 0)
        & (distance < max_answer_length)
    )
    scores = np.where(valid, start[:, None] * end[None, :], 0.0)
    flat = scores.ravel()
    count = min(int(top_k), int(np.count_nonzero(flat > 0)))
    if count == 0:
        return [], null_score
    best = np.argpartition(-flat, count - 1)[:count]
    best = best[np.argsort(-flat[best], kind="stable")]
    return [(int(i // length), int(i % length), float(flat[i])) for i in best], null_score


def word_span(token_ids, context_mask, position, is_continuation):
    """First and last piece of the word (within the window) at `position`.

    Example:
    >>> word_span(np.array([2, 5, 6, 5]), np.array([0, 1, 1, 1], bool), 2,
    ...           np.array([0, 0, 0, 0, 0, 0, 1], bool))
    (1, 2)
    """
    first = last = position
    while first - 1 >= 0 and context_mask[first - 1] and is_continuation[token_ids[first]]:
        first -= 1
    while last + 1 < len(token_ids) and context_mask[last + 1]:
        if not is_continuation[token_ids[last + 1]]:
            break
        last += 1
    return first, last


def decode_answers(
    start_logits,
    end_logits,
    windows,
    contexts,
    is_continuation,
    top_k=1,
    max_answer_length=15,
    handle_impossible_answer=False,
    null_threshold=0.0,
    align_to_words=True,
):
    """Answers for every pair from the logits of its windows.

    Args:
        start_logits, end_logits: float `(windows, sequence)`.
        windows: NumPy values of the dict `question_windows` returns.
        contexts: the context strings, one per pair.
        is_continuation: `continuation_flags(vocabulary)`.
        top_k: answers per pair.
        max_answer_length: longest answer, in pieces.
        handle_impossible_answer: also offer the empty answer, scored with the
            pair's no-answer score.
        null_threshold: the empty answer ranks as if its score were
            `null_score * exp(-null_threshold)`: it wins when
            `log(null_score) - log(best_score)` exceeds the threshold (within a
            window that is `start[CLS] + end[CLS] - start[s] - end[e]` in
            logits, SQuAD 2.0's `null_score_diff_threshold`). 0 is Hugging
            Face's rule.
        align_to_words: widen answers to whole words.

    Returns:
        Per pair, a list of up to `top_k` dicts `{"answer", "start", "end",
        "score"}`, best first; `context[start:end] == answer`.

    Example:
    >>> from kbert.models.qa_windows import question_windows
    >>> windows = question_windows(tokenizer, tf.constant(["who wrote?"]),
    ...                            tf.constant(["Ada wrote notes"]), 16, 4)
    >>> windows = {name: value.numpy() for name, value in windows.items()}
    >>> start, end = np.zeros((1, 16)), np.zeros((1, 16))
    >>> start[0, 5] = end[0, 5] = 10.0  # [CLS] who wrote ? [SEP] ada ...
    >>> flags = continuation_flags(tokenizer.get_vocabulary())
    >>> decode_answers(start, end, windows, ["Ada wrote notes"], flags)[0][0]
    {'answer': 'Ada', 'start': 0, 'end': 3, 'score': 0.99...}
    """
    pre_top_k = 2 * top_k + 10 if align_to_words else top_k
    answers = [[] for _ in contexts]
    null_scores = [1.0] * len(contexts)
    for window, pair in enumerate(windows["example_index"]):
        context_mask = windows["context_mask"][window] > 0
        token_ids = windows["token_ids"][window]
        spans, null_score = window_spans(
            start_logits[window],
            end_logits[window],
            context_mask,
            pre_top_k,
            max_answer_length,
        )
        null_scores[pair] = min(null_scores[pair], null_score)
        for start, end, score in spans:
            if align_to_words:
                start = word_span(token_ids, context_mask, start, is_continuation)[0]
                end = word_span(token_ids, context_mask, end, is_continuation)[1]
            first_char = int(windows["offsets_start"][window][start])
            last_char = int(windows["offsets_end"][window][end])
            text = contexts[pair][first_char:last_char]
            same = next(
                (a for a in answers[pair] if a["answer"].lower() == text.lower()), None
            )
            if same is not None:
                same["score"] += score
            else:
                answers[pair].append(
                    {"answer": text, "start": first_char, "end": last_char, "score": score}
                )
    results = []
    for pair, candidates in enumerate(answers):
        ranked = [(a["score"], a) for a in candidates]
        if handle_impossible_answer:
            null = {"answer": "", "start": 0, "end": 0, "score": null_scores[pair]}
            ranked.append((null_scores[pair] * np.exp(-null_threshold), null))
        ranked.sort(key=lambda item: item[0], reverse=True)
        results.append([answer for _, answer in ranked[:top_k]])
    return results
