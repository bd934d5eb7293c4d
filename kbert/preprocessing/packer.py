"""Dense `[CLS] A [SEP] (B [SEP])` packing with Hugging Face truncation.

Written with dense ops only (pad each segment, then index arithmetic and
`tf.gather(..., batch_dims=1)`): tf-text's `combine_segments` and ragged
slicing emit `RaggedGather` / `RaggedRange`, which no TFLite runtime here can
run, and `RoundRobinTrimmer` differs from `tokenizers`' `longest_first` when
the budget is odd (and is missing from TF Serving <= 2.19).
"""

TRUNCATIONS = ("longest_first", "only_first", "only_second")


def truncated_lengths(lengths, budget, truncation):
    """How many tokens of each segment `tokenizers` keeps.

    `lengths`: one or two int32 tensors `[batch]`; `budget`: the sequence
    length minus the special tokens. Mirrors `truncate_encodings` of
    `tokenizers` (utils/truncation.rs). With two segments, `longest_first`
    gives the shorter one `budget // 2` and the longer one the rest when both
    must be cut (ties: the second gets the extra token). Where `tokenizers`
    raises (`only_first`/`only_second` when the other segment alone is over
    budget), the other segment is cut as well so that everything fits.
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    if len(lengths) == 1:
        if truncation == "only_second":
            raise ValueError('truncation="only_second" needs two segments.')
        return [tf.minimum(lengths[0], budget)]
    n1, n2 = lengths
    over = n1 + n2 > budget
    if truncation == "longest_first":
        swap = n1 > n2
        short = tf.minimum(n1, n2)
        long_kept = tf.where(short > budget, short, tf.maximum(short, budget - short))
        both = short + long_kept > budget
        short_kept = tf.where(both, budget // 2, short)
        long_kept = tf.where(both, budget // 2 + budget % 2, long_kept)
        t1 = tf.where(swap, long_kept, short_kept)
        t2 = tf.where(swap, short_kept, long_kept)
    elif truncation == "only_first":
        t1 = tf.maximum(budget - n2, 0)
        t2 = tf.minimum(n2, budget - t1)
    elif truncation == "only_second":
        t2 = tf.maximum(budget - n1, 0)
        t1 = tf.minimum(n1, budget - t2)
    else:
        raise ValueError(f"`truncation` must be one of {TRUNCATIONS}: {truncation!r}")
    return [tf.where(over, t1, n1), tf.where(over, t2, n2)]


def pack(
    segments,
    sequence_length,
    cls_id,
    sep_id,
    pad_id,
    truncation="longest_first",
    offsets=None,
):
    """Pack one or two ragged id tensors into dense BERT inputs.

    Args:
        segments: list of one or two ragged int32 tensors `[batch, (tokens)]`.
        offsets: optional list (one per segment) of `(starts, ends)` ragged
            int32 tensors shaped like the segment; special and padding
            positions get offsets `(0, 0)`, as in `tokenizers`.

    Returns:
        dict of int32 `[batch, sequence_length]` tensors: `token_ids`,
        `segment_ids`, `padding_mask` (+ `offsets_start`, `offsets_end`).
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    n_special = len(segments) + 1
    if sequence_length < n_special:
        raise ValueError(
            f"sequence_length={sequence_length} leaves no room for the "
            f"{n_special} special tokens of {len(segments)} segment(s)."
        )
    length = sequence_length
    dense = [
        segment.to_tensor(default_value=pad_id, shape=[None, length])
        for segment in segments
    ]
    lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
    kept = truncated_lengths(lengths, length - n_special, truncation)

    # Gather indices must be [batch, length]: TFLite's GATHER does not
    # broadcast its batch dimension.
    batch = tf.shape(dense[0])[0]
    positions = tf.broadcast_to(tf.range(length, dtype=tf.int32)[None, :], [batch, length])
    t1 = kept[0][:, None]
    first = (positions >= 1) & (positions <= t1)
    sep = positions == t1 + 1
    end = t1 + 2  # first position after the first [SEP]
    second = tf.zeros_like(first)
    index_second = tf.zeros_like(positions)
    if len(segments) == 2:
        t2 = kept[1][:, None]
        second = (positions >= end) & (positions < end + t2)
        index_second = tf.clip_by_value(positions - end, 0, length - 1)
        sep |= positions == end + t2
        end = end + t2 + 1
    index_first = tf.clip_by_value(positions - 1, 0, length - 1)

    def place(values, cls_value, sep_value, pad_value):
        """Token-level values of each segment into their packed positions."""
        out = tf.where(positions == 0, cls_value, pad_value)
        out = tf.where(sep, sep_value, out)
        out = tf.where(first, tf.gather(values[0], index_first, batch_dims=1), out)
        if len(values) == 2:
            out = tf.where(second, tf.gather(values[1], index_second, batch_dims=1), out)
        return out

    outputs = {
        "token_ids": place(dense, cls_id, sep_id, pad_id),
        "segment_ids": tf.cast(second | (sep & (positions > t1 + 1)), tf.int32),
        "padding_mask": tf.cast(positions < end, tf.int32),
    }
    if offsets is not None:
        for index, key in enumerate(("offsets_start", "offsets_end")):
            values = [
                pair[index].to_tensor(default_value=0, shape=[None, length])
                for pair in offsets
            ]
            outputs[key] = place(values, 0, 0, 0)
    return outputs
