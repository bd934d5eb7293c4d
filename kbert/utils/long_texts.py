"""Texts longer than the sequence length: counted when cut, or read in windows.

`long_texts="truncate"` (the default of every raw-text path) cuts each text
to the model's `sequence_length` and says so with one `TruncationWarning` per
call; `long_texts="windows", stride=S` reads each text whole, in windows of
`sequence_length` whose consecutive windows share `S` word pieces (the
`stride` of Hugging Face `tokenizers`' overflowing tokens), and puts the
windows' outputs back together per text (`kbert.models.windows`).
"""

import contextlib
import contextvars
import os
import sys
import threading
import warnings

import keras
import numpy as np

LONG_TEXTS = ("truncate", "windows")


class TruncationWarning(UserWarning):
    """Raw texts longer than the model's `sequence_length` were cut to it (or,
    in question answering, questions longer than `max_question_length`).

    Attributes: `truncated` (how many were cut), `total` (how many came in),
    `longest` (the longest one, in tokens with the special tokens), `limit`
    and `limit_name` (`"sequence_length"` or `"max_question_length"`).

    Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_truncated([5, 40, 12], sequence_length=32)
    1
    >>> caught[0].message.truncated, caught[0].message.longest
    (1, 40)
    """

    def __init__(
        self,
        message,
        truncated=0,
        total=0,
        longest=0,
        limit=0,
        limit_name="sequence_length",
    ):
        super().__init__(message)
        self.truncated, self.total, self.longest = truncated, total, longest
        self.limit, self.limit_name = limit, limit_name


# What each limit cuts, and the way out, as the warning says it.
_MESSAGES = {
    "sequence_length": (
        "{truncated} of {total} texts are longer than sequence_length={limit} and "
        "were truncated (the longest has {longest} tokens). Read them whole with a "
        "longer `sequence_length` (up to the model's max_sequence_length) or with "
        '`long_texts="windows"` (overlapping windows, outputs aggregated per text).'
    ),
    "max_question_length": (
        "{truncated} of {total} questions are longer than max_question_length={limit} "
        "word pieces and were cut (the longest has {longest}). Pass a larger "
        "max_question_length (or None) to keep them whole."
    ),
}


def default_stride(budget):
    """Hugging Face's default overlap for question answering,
    `min(budget // 2, 128)`, for `budget` word pieces per window."""
    return min(int(budget) // 2, 128)


def check_long_texts(long_texts, stride, sequence_length, num_special=2):
    """The window overlap to use: None for `"truncate"`, else `stride` checked
    (or the default when None) against the `sequence_length - num_special`
    pieces a window holds.

    Example:
    >>> check_long_texts("windows", 16, sequence_length=64)
    16
    >>> check_long_texts("windows", 62, sequence_length=64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: stride=62 must be less than the 62 word pieces a window holds ...
    """
    if long_texts not in LONG_TEXTS:
        raise ValueError(
            'long_texts must be "truncate" or "windows"; received '
            f"long_texts={long_texts!r}."
        )
    if long_texts == "truncate":
        if stride is not None:
            raise ValueError(
                f'stride={stride!r} applies to long_texts="windows" only; '
                f"received it with long_texts={long_texts!r}."
            )
        return None
    budget = int(sequence_length) - num_special
    if stride is None:
        return default_stride(budget)
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)):
        raise ValueError(f"stride must be an integer; received stride={stride!r}.")
    if stride < 0:
        raise ValueError(f"stride must be 0 or more; received stride={stride}.")
    if stride >= budget:
        raise ValueError(
            f"stride={stride} must be less than the {budget} word pieces a window "
            f"holds (sequence_length={sequence_length} minus {num_special} special "
            "tokens)."
        )
    return int(stride)


def warn_truncated(lengths, sequence_length):
    """Warns once (`TruncationWarning`) when any of `lengths` (tokens per text,
    special tokens included) is over `sequence_length`; returns how many are."""
    return _warn_over(lengths, sequence_length, "sequence_length")


def warn_long_questions(lengths, max_question_length):
    """Warns once (`TruncationWarning`) when question answering cuts any of
    the questions (word pieces per question in `lengths`) to
    `max_question_length`; returns how many it cuts.

    Example:
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_long_questions([5, 70], max_question_length=64)
    1
    >>> str(caught[0].message)[:58]
    '1 of 2 questions are longer than max_question_length=64 wo'
    """
    return _warn_over(lengths, max_question_length, "max_question_length")


def count_cut(lengths, limit, limit_name="sequence_length"):
    """Counts the texts (or questions) that `limit` cuts, from the TensorFlow
    tensor `lengths`, wherever tokenization runs.

    Eagerly it warns as `warn_truncated` does. Traced into a graph inside
    `deferred_counts`, it lists the tensor for the caller to count later
    (where batches are read, not where tf.data makes them ahead). Traced
    inside `one_truncation_warning`, it returns an op to run before the cut
    (`tf.control_dependencies`) that counts each time the graph runs, into
    that scope's one warning; any other graph (an exported serving
    signature) counts nothing and gets no op.
    """
    import tensorflow as tf  # lazy: only where text is tokenized, with TF

    if tf.executing_eagerly():
        _warn_over(lengths.numpy(), limit, limit_name)
        return []
    deferred, held = _DEFERRED.get(), _GRAPH_HELD.get()
    if deferred is not None:
        deferred.append((lengths, limit, limit_name))
        return []
    if held is None:
        return []

    def count(values):  # runs in tf.data's threads, as batches are made
        token = _HELD.set(held)
        try:
            _warn_over(values, limit, limit_name)
        finally:
            _HELD.reset(token)
        return np.int32(0)

    return [tf.numpy_function(count, [lengths], tf.int32, stateful=True, name="count_cut")]


def _warn_over(lengths, limit, limit_name):
    lengths = np.asarray(lengths).reshape(-1)
    truncated = int(np.sum(lengths > limit))
    counts = (truncated, len(lengths), int(lengths.max(initial=0)))
    held = _HELD.get()
    if held is not None:  # inside `held_truncations`: counted, said later
        add_held(held, {(limit_name, limit): counts})
    elif truncated:
        _warn(*counts, limit, limit_name)
    return truncated


def _warn(truncated, total, longest, limit, limit_name):
    counts = dict(truncated=truncated, total=total, longest=longest, limit=limit)
    warnings.warn(
        TruncationWarning(
            _MESSAGES[limit_name].format(**counts), **counts, limit_name=limit_name
        ),
        stacklevel=_user_stacklevel(),
    )


# The counts `held_truncations` gathers in this context, or None.
_HELD = contextvars.ContextVar("kbert_held_truncations", default=None)
# Where graphs traced in this context count as they run (`count_cut`), or None.
_GRAPH_HELD = contextvars.ContextVar("kbert_graph_truncations", default=None)
# The `(lengths, limit, limit_name)` that `count_cut` defers, or None.
_DEFERRED = contextvars.ContextVar("kbert_deferred_counts", default=None)
# `add_held` runs in the caller's thread and in tf.data's.
_ADD_LOCK = threading.Lock()


@contextlib.contextmanager
def held_truncations():
    """Within, cutting texts (or questions) warns nothing: the counts are
    gathered in the yielded dict, `{(limit_name, limit): (truncated, total,
    longest)}`, every call that counted adding its texts to `total` (cut or
    not). Plain data: a worker process returns it, and `warn_held` gives it
    once where the call began (`distributed_predict`).

    Example:
    >>> with held_truncations() as held:
    ...     _ = warn_truncated([40, 5], sequence_length=32)
    ...     _ = warn_truncated([7, 9], sequence_length=32)
    >>> held
    {('sequence_length', 32): (1, 4, 40)}
    """
    held = {}
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


def add_held(held, more):
    """Adds the counts `more` to `held` (both as `held_truncations` gives
    them): texts and cut texts summed, the longest kept, per limit."""
    with _ADD_LOCK:
        for key, (truncated, total, longest) in more.items():
            was = held.get(key, (0, 0, 0))
            held[key] = (was[0] + truncated, was[1] + total, max(was[2], longest))
    return held


def warn_held(held):
    """One `TruncationWarning` per limit for the counts `held` (summed over
    every call they came from), where any text was cut; inside an outer
    `held_truncations`, the counts go to it instead."""
    outer = _HELD.get()
    if outer is not None:
        add_held(outer, held)
        return
    for (limit_name, limit), (truncated, total, longest) in held.items():
        if truncated:
            _warn(truncated, total, longest, limit, limit_name)


@contextlib.contextmanager
def deferred_counts():
    """Within (a `tf.data` map being traced), `count_cut` counts nothing
    itself and lists its `(lengths, limit, limit_name)` in the yielded list,
    for the caller to pass on and count with `count_cut` where the batches
    are read: tf.data makes batches ahead (`prefetch`), and those never read
    are not cut for the caller."""
    deferred = []
    token = _DEFERRED.set(deferred)
    try:
        yield deferred
    finally:
        _DEFERRED.reset(token)


@contextlib.contextmanager
def uncounted():
    """Within, texts cut are not counted, eagerly or in graphs traced here: a
    look at data that the call reads again (the first batch, for checks)."""
    with held_truncations():
        token = _GRAPH_HELD.set(None)
        try:
            yield
        finally:
            _GRAPH_HELD.reset(token)


@contextlib.contextmanager
def one_truncation_warning():
    """Within, texts cut warn once, on exit, their counts summed: one call
    that cuts texts in two places (`fit`'s training and validation texts)
    warns once, counting every text it read. One warning per limit. A
    `tf.data` map traced within counts as it runs (`count_cut`), until the
    scope ends: a text read in each of three epochs counts three times.

    Example:
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with one_truncation_warning():
    ...         _ = warn_truncated([40, 5], sequence_length=32)
    ...         _ = warn_truncated([50, 60, 7], sequence_length=32)
    ...         _ = warn_truncated([9], sequence_length=32)  # none cut: counted
    >>> len(caught), caught[0].message.truncated, caught[0].message.total
    (1, 3, 6)
    >>> with warnings.catch_warnings(record=True) as caught:  # one per limit
    ...     warnings.simplefilter("always")
    ...     with one_truncation_warning():
    ...         _ = warn_truncated([40], sequence_length=32)
    ...         _ = warn_long_questions([70], max_question_length=64)
    >>> [w.message.limit_name for w in caught]
    ['sequence_length', 'max_question_length']
    """
    with held_truncations() as held:
        token = _GRAPH_HELD.set(held)
        try:
            yield
        finally:
            _GRAPH_HELD.reset(token)
    warn_held(held)


def _user_stacklevel():
    """The `stacklevel` of the first caller outside kbert and the installed
    packages (Keras, TensorFlow), so that the warning names the user's line."""
    inside = tuple(  # kbert's directory, and the installed packages' (Keras')
        os.path.dirname(os.path.dirname(module.__file__)) + os.sep
        for module in (sys.modules["kbert.utils"], keras)
    )
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level
