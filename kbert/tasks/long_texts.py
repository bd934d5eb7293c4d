"""Texts longer than the sequence length: counted when cut, or read in windows.

`long_texts="truncate"` (the default of every raw-text path) cuts each text
to the model's `sequence_length` and says so with one `TruncationWarning` per
call; `long_texts="windows", stride=S` reads each text whole, in windows of
`sequence_length` whose consecutive windows share `S` word pieces (the
`stride` of Hugging Face `tokenizers`' overflowing tokens), and puts the
windows' outputs back together per text (`kbert.tasks.windows`).
"""

import contextlib
import os
import sys
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


def _warn_over(lengths, limit, limit_name):
    lengths = np.asarray(lengths).reshape(-1)
    truncated = int(np.sum(lengths > limit))
    if truncated:
        _warn(truncated, len(lengths), int(lengths.max()), limit, limit_name)
    return truncated


def _warn(truncated, total, longest, limit, limit_name):
    counts = dict(truncated=truncated, total=total, longest=longest, limit=limit)
    warnings.warn(
        TruncationWarning(
            _MESSAGES[limit_name].format(**counts), **counts, limit_name=limit_name
        ),
        stacklevel=_user_stacklevel(),
    )


@contextlib.contextmanager
def one_truncation_warning():
    """Within, `TruncationWarning`s are held and given once on exit, their
    counts summed: one call that cuts texts in two places (`fit`'s training
    and validation texts) warns once. Other warnings pass through.

    Example:
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with one_truncation_warning():
    ...         _ = warn_truncated([40, 5], sequence_length=32)
    ...         _ = warn_truncated([50, 60, 7], sequence_length=32)
    >>> len(caught), caught[0].message.truncated, caught[0].message.total
    (1, 3, 5)
    >>> with warnings.catch_warnings(record=True) as caught:  # one per limit
    ...     warnings.simplefilter("always")
    ...     with one_truncation_warning():
    ...         _ = warn_truncated([40], sequence_length=32)
    ...         _ = warn_long_questions([70], max_question_length=64)
    >>> [w.message.limit_name for w in caught]
    ['sequence_length', 'max_question_length']
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    held = {}  # one warning per limit: texts and questions are not summed together
    for found in caught:
        message = found.message
        if isinstance(message, TruncationWarning):
            held.setdefault((message.limit_name, message.limit), []).append(message)
        else:
            warnings.warn_explicit(message, found.category, found.filename, found.lineno)
    for (limit_name, limit), messages in held.items():
        _warn(
            sum(m.truncated for m in messages),
            sum(m.total for m in messages),
            max(m.longest for m in messages),
            limit,
            limit_name,
        )


def _user_stacklevel():
    """The `stacklevel` of the first caller outside kbert and the installed
    packages (Keras, TensorFlow), so that the warning names the user's line."""
    inside = tuple(  # kbert's directory, and the installed packages' (Keras')
        os.path.dirname(os.path.dirname(module.__file__)) + os.sep
        for module in (sys.modules["kbert.tasks"], keras)
    )
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level
