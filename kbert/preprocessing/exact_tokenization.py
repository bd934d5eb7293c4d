"""WordPiece tokenization with exactly Hugging Face's results, in TF ops.

The pipeline of `tokenizers.BertWordPieceTokenizer`:

1. split the raw text around literal special tokens (`[CLS]`, `[MASK]`...),
   which `tokenizers` matches before normalizing;
2. normalize the other pieces (`normalizer.normalize`);
3. split into words (`normalizer.split_words_with_offsets`);
4. a word of more than `max_chars_per_word` characters becomes `[UNK]`;
5. greedy longest-match-first WordPiece (tf-text's FastWordpieceTokenizer).

Special pieces and over-long words are replaced by a private-use stand-in
character (normalization deletes every private-use character of the input,
so a stand-in can only come from here) and their ids are set afterwards.

For offsets, the normalized length of every character, normalized on its
own, tells which original character each normalized byte comes from. That
holds because the normalization works character by character: deletions,
replacements, CJK padding, per-character NFD (only the canonical reordering
of combining characters could move a mark, and all Mn marks are deleted),
per-character lowercasing (the one contextual ICU rule, final sigma, is
disabled).
"""

from kbert.preprocessing import normalizer

STAND_IN_BASE = 0xE000


def _row_positions(ragged):
    """Index of each value of a 2-D ragged tensor within its row."""
    import tensorflow as tf  # lazy: TF only when text is tokenized

    rows = ragged.value_rowids()
    return tf.range(tf.size(rows, out_type=rows.dtype)) - tf.gather(ragged.row_splits, rows)


def _exclusive_cumsum_in_rows(values, row_splits):
    """Per-row exclusive cumulative sum of a flat tensor split by row_splits."""
    import tensorflow as tf  # lazy: TF only when text is tokenized

    total = tf.concat([[0], tf.cumsum(values)], axis=0)
    rows = tf.ragged.row_splits_to_segment_ids(row_splits)
    return total[:-1] - tf.gather(total, tf.gather(row_splits, rows))


def _normalized_char_lengths(code_points, is_special, lowercase, strip_accents):
    """UTF-8 length of each character once normalized on its own.

    Normalization works character by character (see `normalizer`), so these
    lengths say which original character each normalized byte comes from.
    ASCII is done with arithmetic; only the other characters go through the
    string ops. A special token's stand-in stays (3 bytes).
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    is_ascii_control = (
        (code_points < 32) & (code_points != 9) & (code_points != 10) & (code_points != 13)
    ) | (code_points == 127)
    lengths = tf.where(is_ascii_control, 0, 1)
    others = tf.where((code_points >= 128) & ~is_special)
    strings = tf.strings.unicode_encode(tf.gather_nd(code_points, others)[:, None], "UTF-8")
    normalized = normalizer.normalize(strings, lowercase, strip_accents)
    lengths = tf.tensor_scatter_nd_update(lengths, others, tf.strings.length(normalized))
    lengths = tf.where(is_special, 3, lengths)
    return tf.cast(lengths, tf.int64)


def tokenize(
    text,
    wordpiece,
    special_tokens,
    unk_id,
    lowercase,
    strip_accents,
    max_chars_per_word,
    with_offsets=False,
):
    """Token ids (and character offsets) of a 1-D string tensor.

    Args:
        text: 1-D `tf.string` tensor.
        wordpiece: a `tft.FastWordpieceTokenizer` built with
            `no_pretokenization=True` and int32 output.
        special_tokens: non-empty list of `(literal, id)` matched in the raw
            text.
        unk_id: id of `[UNK]`.

    Returns:
        ragged int32 ids `[batch, (tokens)]`; with `with_offsets`, also
        ragged int32 start/end offsets in characters (code points) into
        `text`, end exclusive.
    """
    # lazy: TF only when text is tokenized
    import tensorflow as tf
    import tensorflow_text as tft

    # Stand-ins: one per special token, and one for over-long words.
    stand_ins = [chr(STAND_IN_BASE + k) for k in range(len(special_tokens) + 1)]
    stand_in_ids = [token_id for _, token_id in special_tokens] + [unk_id]

    # Fails (InvalidArgumentError) on bytes that are not UTF-8.
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="strict")
    # tf-text's regex split and ICU lowercasing stop at a NUL byte. NUL is
    # deleted by normalization anyway: make it U+FFFD, deleted just the same.
    text = tf.strings.regex_replace(text, r"\x00", "\ufffd")
    # 1. Raw pieces around literal special tokens (the vocabulary always has
    # some: [PAD], [UNK], [CLS] and [SEP] are required).
    pattern = "|".join(rf"\Q{literal}\E" for literal, _ in special_tokens)
    pieces = tft.regex_split(text, pattern, pattern)
    raw_pieces = pieces.flat_values
    stand_in = raw_pieces
    is_special = tf.zeros_like(raw_pieces, dtype=tf.bool)
    for (literal, _), character in zip(special_tokens, stand_ins):
        match = tf.equal(raw_pieces, literal)
        is_special |= match
        stand_in = tf.where(match, character, stand_in)

    # 2. Normalize.
    normalized = tf.where(
        is_special, stand_in, normalizer.normalize(raw_pieces, lowercase, strip_accents)
    )
    if with_offsets:
        chars = tf.strings.unicode_decode(stand_in, "UTF-8")
        char_is_special = tf.gather(is_special, chars.value_rowids())
        normalized_lengths = _normalized_char_lengths(
            chars.flat_values, char_is_special, lowercase, strip_accents
        )
        # Where each normalized character starts, in bytes, counted over the
        # concatenation of all pieces of the batch (non-decreasing).
        char_norm_starts = tf.cumsum(normalized_lengths, exclusive=True)
        piece_norm_starts = tf.gather(
            tf.concat([char_norm_starts, [tf.reduce_sum(normalized_lengths)]], 0),
            chars.row_splits[:-1],
        )
        # Each character's span in the original text, in code points.
        raw_char_counts = tf.strings.length(raw_pieces, unit="UTF8_CHAR")
        piece_char_starts = _exclusive_cumsum_in_rows(raw_char_counts, pieces.row_splits)
        char_starts = tf.gather(piece_char_starts, chars.value_rowids()) + tf.cast(
            _row_positions(chars), tf.int32
        )
        char_ends = tf.where(
            char_is_special,
            char_starts + tf.gather(raw_char_counts, chars.value_rowids()),
            char_starts + 1,
        )

    # 3. Words.
    words, word_starts, word_ends = normalizer.split_words_with_offsets(normalized)
    flat_words = words.flat_values
    word_chars = tf.strings.length(flat_words, unit="UTF8_CHAR")
    # 4. Over-long words, then 5. WordPiece.
    flat_words = tf.where(word_chars > max_chars_per_word, stand_ins[-1], flat_words)
    ids, starts, ends = wordpiece.tokenize_with_offsets(flat_words)
    override = tf.fill(tf.shape(flat_words), -1)
    for character, token_id in zip(stand_ins, stand_in_ids):
        override = tf.where(tf.equal(flat_words, character), token_id, override)
    piece_word = ids.value_rowids()
    piece_override = tf.gather(override, piece_word)
    token_ids = tf.where(piece_override >= 0, piece_override, ids.flat_values)
    # [batch, pieces, words, wordpieces] -> [batch, tokens]
    nested = pieces.with_flat_values(
        words.with_flat_values(ids.with_flat_values(token_ids))
    )
    token_ids = nested.merge_dims(1, 3)
    if not with_offsets:
        return token_ids

    # Offsets: normalized byte span of each wordpiece, then back to characters.
    word_lengths = (word_ends - word_starts).flat_values
    overridden = piece_override >= 0
    starts = tf.where(overridden, tf.constant(0, tf.int64), starts.flat_values)
    ends = tf.where(overridden, tf.gather(word_lengths, piece_word), ends.flat_values)
    word_global = tf.gather(piece_norm_starts, words.value_rowids()) + tf.cast(
        word_starts.flat_values, piece_norm_starts.dtype
    )
    base = tf.gather(word_global, piece_word)
    first = tf.searchsorted(char_norm_starts, base + starts, side="right") - 1
    last = tf.searchsorted(char_norm_starts, base + ends - 1, side="right") - 1
    start_chars = tf.gather(char_starts, first)
    end_chars = tf.gather(char_ends, last)
    return (
        token_ids,
        token_ids.with_flat_values(start_chars),
        token_ids.with_flat_values(end_chars),
    )
