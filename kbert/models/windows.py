"""Long token sequences -> overlapping windows, as Hugging Face makes them.

`[CLS] piece... [SEP]`, or `[CLS] prefix [SEP] piece... [SEP]` when a
prefix (a question, a first text) stays whole in every window, with
`return_overflowing_tokens=True, stride=S` (`truncation="only_second"` for
pairs): when the pieces do not fit `sequence_length`, they are cut into
windows of `budget = sequence_length - len(prefix) - specials` pieces
starting every `budget - S` pieces (consecutive windows share `S` pieces),
until one reaches the end. TensorFlow ops, so it runs inside `tf.data` as
well as eagerly. `stitch` puts per-token outputs of the windows back
together, each token taken from the window where it has the most context.
"""

import numpy as np


def piece_windows(
    pieces,
    sequence_length,
    stride,
    cls_id,
    sep_id,
    pad_id,
    prefix=None,
    values=None,
    stride_name="stride",
):
    """All windows of every row of `pieces`.

    Args:
        pieces: ragged int `(rows, (pieces))` tensor, the part cut into windows.
        sequence_length: the packed length of each window.
        stride: how many pieces consecutive windows share; must be less than
            the budget of every window that is cut.
        cls_id, sep_id, pad_id: the special token ids.
        prefix: optional ragged int `(rows, (pieces))`, kept whole at the head
            of each window of its row (segment 0; the windowed pieces are
            segment 1).
        values: optional `{name: (ragged, fill)}`, ragged values shaped like
            `pieces` (offsets, word ids) placed as the pieces are, `fill`
            elsewhere.
        stride_name: what the caller calls `stride`, for the error message.

    Returns:
        A dict of int32 `(windows, sequence_length)` tensors `token_ids`,
        `segment_ids`, `padding_mask`, `context_mask` (1 on the windowed
        pieces) and one per `values` name; and int32 `(windows,)`
        `example_index` (the row each window comes from) and `window_start`
        (the index of its first piece in the row). Windows come in order,
        row by row.

    Example:
    >>> ids = tf.ragged.constant([[7, 8, 9, 10, 11], [7]])
    >>> windows = piece_windows(ids, 5, 1, cls_id=2, sep_id=3, pad_id=0)
    >>> windows["token_ids"].numpy().tolist()
    [[2, 7, 8, 9, 3], [2, 9, 10, 11, 3], [2, 7, 3, 0, 0]]
    >>> windows["example_index"].numpy(), windows["window_start"].numpy()
    (array([0, 0, 1], dtype=int32), array([0, 2, 0], dtype=int32))
    """
    import tensorflow as tf  # lazy: TF only for raw text

    num_pieces = tf.cast(pieces.row_lengths(), tf.int32)
    if prefix is None:
        num_prefix = tf.zeros_like(num_pieces)
        specials = 2
    else:
        num_prefix = tf.cast(prefix.row_lengths(), tf.int32)
        specials = 3
    budget, step, num_windows = _layout(
        num_prefix, num_pieces, sequence_length, stride, specials, stride_name
    )

    example_index = tf.repeat(tf.range(tf.shape(num_windows)[0]), num_windows)
    window_number = tf.ragged.range(num_windows).flat_values
    first = window_number * tf.gather(step, example_index)
    num_prefix = tf.gather(num_prefix, example_index)[:, None]
    length = tf.minimum(
        tf.gather(budget, example_index), tf.gather(num_pieces, example_index) - first
    )[:, None]

    positions = tf.range(sequence_length)[None, :]
    begin = num_prefix + specials - 1  # the first windowed piece
    is_prefix = (positions >= 1) & (positions <= num_prefix)
    is_piece = (positions >= begin) & (positions < begin + length)
    last_sep = positions == begin + length
    is_sep = last_sep if prefix is None else (positions == num_prefix + 1) | last_sep

    def gather(ragged, offset_in_row):
        """`ragged[row, offset_in_row]` for every window and position."""
        row_start = tf.gather(tf.cast(ragged.row_starts(), tf.int32), example_index)
        # One sentinel value so that the index is valid even for empty rows.
        values = tf.concat([tf.cast(ragged.flat_values, tf.int32), [0]], 0)
        index = tf.clip_by_value(row_start[:, None] + offset_in_row, 0, tf.size(values) - 1)
        return tf.gather(values, index)

    piece_offset = first[:, None] + positions - begin
    token_ids = tf.where(is_piece, gather(pieces, piece_offset), pad_id)
    if prefix is not None:
        token_ids = tf.where(is_prefix, gather(prefix, positions - 1), token_ids)
    token_ids = tf.where(is_sep, sep_id, token_ids)
    token_ids = tf.where(positions == 0, cls_id, token_ids)
    segment = (is_piece | last_sep) if prefix is not None else tf.zeros_like(is_piece)
    outputs = {
        "token_ids": token_ids,
        "segment_ids": tf.cast(segment, tf.int32),
        "padding_mask": tf.cast(positions <= begin + length, tf.int32),
        "context_mask": tf.cast(is_piece, tf.int32),
        "example_index": example_index,
        "window_start": first,
    }
    for name, (ragged, fill) in (values or {}).items():
        outputs[name] = tf.where(is_piece, gather(ragged, piece_offset), fill)
    return outputs


def _layout(num_prefix, num_pieces, sequence_length, stride, specials, stride_name):
    """Per row: pieces per window, step between windows, window count."""
    import tensorflow as tf  # lazy: TF only for raw text

    budget = sequence_length - num_prefix - specials
    fits = num_pieces <= budget
    check = tf.debugging.Assert(
        tf.reduce_all(fits | (budget > stride)),
        [
            f"{stride_name}={stride} must be less than the budget of every window that "
            f"is cut (sequence_length={sequence_length} minus the first segment "
            f"minus {specials} special tokens): lower {stride_name} or the first "
            "segment's length, or raise sequence_length."
        ],
    )
    with tf.control_dependencies([check]):
        budget = tf.identity(budget)
    step = tf.maximum(budget - stride, 1)
    overflow = tf.maximum(num_pieces - budget, 0)
    return budget, step, 1 + (overflow + step - 1) // step


def mean_per_example(values, example_index, count, weights=None):
    """The (weighted) mean of the window rows of each example, `(count, ...)`.

    Example:
    >>> mean_per_example(np.array([[1.0], [3.0], [5.0]]), np.array([0, 0, 1]), 2)
    array([[2.],
           [5.]])
    """
    values = np.asarray(values)
    weights = np.ones(len(values)) if weights is None else np.asarray(weights, "float64")
    weighted = values * weights.reshape((-1,) + (1,) * (values.ndim - 1))
    total = np.zeros((count,) + values.shape[1:], "float64")
    np.add.at(total, example_index, weighted)
    norm = np.zeros(count, "float64")
    np.add.at(norm, example_index, weights)
    norm = norm.reshape((-1,) + (1,) * (values.ndim - 1))
    return (total / np.maximum(norm, 1e-12)).astype(values.dtype)


def stitch(values, windows, count, axis=1):
    """Per-token outputs of single-text windows back into one row per text.

    Each row is `[CLS] every piece [SEP]`, padded with zeros to the longest
    (at least the windows' length): `[CLS]` from the text's first window,
    `[SEP]` from its last, and each piece from the window where it has the
    most context on both sides (the most pieces of the text before and
    after it; the earlier window on ties), as Google's `run_squad.py`
    chooses (`_check_is_max_context`).

    Args:
        values: window outputs with their sequence axis at `axis`.
        windows: NumPy `example_index`, `window_start` and `padding_mask` of
            the windows (`piece_windows` without a prefix).
        count: how many texts.

    Example:
    >>> ids = tf.ragged.constant([[7, 8, 9, 10, 11]])
    >>> windows = {k: v.numpy() for k, v in piece_windows(ids, 5, 1, 2, 3, 0).items()}
    >>> stitch(windows["token_ids"], windows, 1).tolist()
    [[2, 7, 8, 9, 10, 11, 3]]
    """
    values = np.moveaxis(np.asarray(values), axis, 1)
    index, start = windows["example_index"], windows["window_start"]
    pieces = windows["padding_mask"].sum(axis=-1) - 2  # pieces in each window
    ends = np.zeros(count, "int64")  # pieces of each text
    np.maximum.at(ends, index, start + pieces)
    width = max(values.shape[1], int(ends.max(initial=0)) + 2)
    result = np.zeros((count, width) + values.shape[2:], values.dtype)
    best = np.full((count, width), -1)
    for window in range(len(index)):
        row, first, length = index[window], start[window], pieces[window]
        piece = np.arange(length)
        score = np.minimum(piece, length - 1 - piece)  # context within the window
        target = first + 1 + piece
        better = score > best[row, target]
        result[row, target[better]] = values[window, 1 + piece[better]]
        best[row, target[better]] = score[better]
        if first == 0:
            result[row, 0] = values[window, 0]
        if first + length == ends[row]:
            result[row, ends[row] + 1] = values[window, length + 1]
    return np.moveaxis(result, 1, axis)
