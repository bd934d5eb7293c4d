"""Answer character spans -> start/end token positions in each QA window."""

CLS_POSITION = 0


def answer_positions(windows, answer_starts, answer_ends):
    """Start and end token positions of each window's answer, HF `run_qa` style.

    The start is the last context piece that begins at or before the
    answer's first character, the end the first piece that ends at or after
    its last one. A window that does not hold the whole answer, and a pair
    without an answer (`answer_start < 0`), point both at `[CLS]` (0).

    Args:
        windows: the dict `question_windows` returns.
        answer_starts, answer_ends: int `(pairs,)` character offsets into
            each context, end exclusive.

    Returns:
        `(start_positions, end_positions)`, int32 `(windows,)` each.

    Example:
    >>> from kbert.models.qa_windows import question_windows
    >>> windows = question_windows(tokenizer, tf.constant(["who?"]),
    ...                            tf.constant(["ada wrote"]), 16, 4)
    >>> starts, ends = answer_positions(windows, tf.constant([0]), tf.constant([3]))
    >>> starts.numpy(), ends.numpy()  # [CLS] who ? [SEP] ada wrote [SEP]
    (array([4], dtype=int32), array([4], dtype=int32))
    """
    import tensorflow as tf  # lazy: TF only for raw text

    index = windows["example_index"]
    start_char = tf.gather(tf.cast(answer_starts, tf.int32), index)[:, None]
    end_char = tf.gather(tf.cast(answer_ends, tf.int32), index)[:, None]
    context = windows["context_mask"] > 0
    length = tf.shape(context)[1]
    positions = tf.broadcast_to(tf.range(length)[None, :], tf.shape(context))
    starts_before = context & (windows["offsets_start"] <= start_char)
    ends_after = context & (windows["offsets_end"] >= end_char)
    start = tf.reduce_max(tf.where(starts_before, positions, -1), axis=1)
    end = tf.reduce_min(tf.where(ends_after, positions, length), axis=1)
    # Some piece starting at or before the answer and some ending at or after
    # it exist exactly when the window's context covers the whole answer.
    inside = (
        tf.reduce_any(starts_before, axis=1)
        & tf.reduce_any(ends_after, axis=1)
        & (start <= end)
        & (start_char[:, 0] >= 0)
    )
    return (
        tf.where(inside, start, CLS_POSITION),
        tf.where(inside, end, CLS_POSITION),
    )
