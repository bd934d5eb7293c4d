"""Question + long context -> overlapping windows, as Hugging Face makes them.

`[CLS] question [SEP] context piece [SEP]` with `truncation="only_second"`
and `return_overflowing_tokens=True, stride=doc_stride`: when the pair does
not fit `sequence_length`, the context is cut into windows of
`budget = sequence_length - len(question) - 3` pieces starting every
`budget - doc_stride` pieces (consecutive windows share `doc_stride` pieces),
until one reaches the end of the context. TensorFlow ops, so it runs inside
`tf.data` (training) as well as eagerly (`BertQuestionAnswerer.answer`).
"""


def default_doc_stride(sequence_length):
    """Hugging Face's default overlap: `min(sequence_length // 2, 128)`.

    Example:
    >>> default_doc_stride(384)
    128
    """
    return min(int(sequence_length) // 2, 128)


def question_windows(
    tokenizer, questions, contexts, sequence_length, doc_stride, max_question_length=None
):
    """All windows of every (question, context) pair.

    Args:
        tokenizer: a `BertTokenizer`.
        questions, contexts: 1-D `tf.string` tensors of equal length.
        sequence_length: the packed length of each window.
        doc_stride: how many context pieces consecutive windows share; must
            be less than the context budget of every window that is cut.
        max_question_length: cut questions to this many pieces (`None`: keep
            them whole, as Hugging Face's fast tokenizers do).

    Returns:
        A dict: `token_ids`, `segment_ids`, `padding_mask`, `context_mask` (1
        on context pieces), `offsets_start` / `offsets_end` (character span of
        each context piece in its context, 0 elsewhere), all int32
        `(windows, sequence_length)`; and `example_index` (the pair each
        window comes from), int32 `(windows,)`. Windows come in order, pair
        by pair.

    Example:
    >>> context = "one two three one two three one two three one two three"
    >>> windows = question_windows(tokenizer, tf.constant(["who?"]),
    ...                            tf.constant([context]), 16, 2)
    >>> windows["example_index"].numpy()  # 12 context pieces, 11 per window
    array([0, 0], dtype=int32)
    """
    import tensorflow as tf  # lazy: TF only for raw text

    question_ids = _question_ids(tokenizer, questions, max_question_length)
    context_ids, starts, ends = tokenizer.tokenize_tensor(contexts, with_offsets=True)
    num_question = tf.cast(question_ids.row_lengths(), tf.int32)
    num_context = tf.cast(context_ids.row_lengths(), tf.int32)
    budget, step, num_windows = _layout(
        num_question, num_context, sequence_length, doc_stride
    )

    example_index = tf.repeat(tf.range(tf.shape(num_windows)[0]), num_windows)
    window_number = tf.ragged.range(num_windows).flat_values
    first = window_number * tf.gather(step, example_index)
    num_question = tf.gather(num_question, example_index)[:, None]
    length = tf.minimum(
        tf.gather(budget, example_index), tf.gather(num_context, example_index) - first
    )[:, None]

    positions = tf.range(sequence_length)[None, :]
    is_question = (positions >= 1) & (positions <= num_question)
    context_begin = num_question + 2
    is_context = (positions >= context_begin) & (positions < context_begin + length)
    last_sep = positions == context_begin + length
    is_sep = (positions == num_question + 1) | last_sep

    def gather(ragged, offset_in_row):
        """`ragged[example, offset_in_row]` for every window and position."""
        row_start = tf.gather(tf.cast(ragged.row_starts(), tf.int32), example_index)
        # One sentinel value so that the index is valid even for empty rows.
        values = tf.concat([tf.cast(ragged.flat_values, tf.int32), [0]], 0)
        index = tf.clip_by_value(row_start[:, None] + offset_in_row, 0, tf.size(values) - 1)
        return tf.gather(values, index)

    question_tokens = gather(question_ids, positions - 1)
    context_offset = first[:, None] + positions - context_begin
    context_tokens = gather(context_ids, context_offset)
    token_ids = tf.where(is_context, context_tokens, tokenizer.pad_token_id)
    token_ids = tf.where(is_question, question_tokens, token_ids)
    token_ids = tf.where(is_sep, tokenizer.sep_token_id, token_ids)
    token_ids = tf.where(positions == 0, tokenizer.cls_token_id, token_ids)
    zeros = tf.zeros_like(token_ids)
    return {
        "token_ids": token_ids,
        "segment_ids": tf.cast(is_context | last_sep, tf.int32),
        "padding_mask": tf.cast(positions <= context_begin + length, tf.int32),
        "context_mask": tf.cast(is_context, tf.int32),
        "offsets_start": tf.where(is_context, gather(starts, context_offset), zeros),
        "offsets_end": tf.where(is_context, gather(ends, context_offset), zeros),
        "example_index": example_index,
    }


def _question_ids(tokenizer, questions, max_question_length):
    question_ids = tokenizer.tokenize_tensor(questions)
    if max_question_length is not None:
        question_ids = question_ids[:, :max_question_length]
    return question_ids


def _layout(num_question, num_context, sequence_length, doc_stride):
    """Per pair: context pieces per window, step between windows, window count."""
    import tensorflow as tf  # lazy: TF only for raw text

    budget = sequence_length - num_question - 3
    fits = num_context <= budget
    check = tf.debugging.Assert(
        tf.reduce_all(fits | (budget > doc_stride)),
        [
            f"doc_stride={doc_stride} must be less than the context budget of every "
            f"window that is cut (sequence_length={sequence_length} minus the "
            "question minus 3 special tokens): lower doc_stride or "
            "max_question_length, or raise sequence_length."
        ],
    )
    with tf.control_dependencies([check]):
        budget = tf.identity(budget)
    step = tf.maximum(budget - doc_stride, 1)
    overflow = tf.maximum(num_context - budget, 0)
    return budget, step, 1 + (overflow + step - 1) // step
