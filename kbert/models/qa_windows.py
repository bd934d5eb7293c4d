"""Question + long context -> overlapping windows, as Hugging Face makes them.

`[CLS] question [SEP] context piece [SEP]` with `truncation="only_second"`
and `return_overflowing_tokens=True, stride=doc_stride`: when the pair does
not fit `sequence_length`, the context is cut into windows of
`budget = sequence_length - len(question) - 3` pieces starting every
`budget - doc_stride` pieces (consecutive windows share `doc_stride` pieces),
until one reaches the end of the context. TensorFlow ops, so it runs inside
`tf.data` (training) as well as eagerly (`BertQuestionAnswerer.answer`).
"""

from kbert.models.windows import piece_windows
from kbert.utils.long_texts import count_cut


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
    question_ids = _question_ids(tokenizer, questions, max_question_length)
    context_ids, starts, ends = tokenizer.tokenize_tensor(contexts, with_offsets=True)
    windows = piece_windows(
        context_ids,
        sequence_length,
        doc_stride,
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
        tokenizer.pad_token_id,
        prefix=question_ids,
        values={"offsets_start": (starts, 0), "offsets_end": (ends, 0)},
        stride_name="doc_stride",
    )
    del windows["window_start"]
    return windows


def _question_ids(tokenizer, questions, max_question_length):
    import tensorflow as tf  # lazy: QA windows are cut with TensorFlow ops

    question_ids = tokenizer.tokenize_tensor(questions)
    if max_question_length is not None:
        lengths = question_ids.row_lengths()
        counted = count_cut(lengths, max_question_length, "max_question_length")
        with tf.control_dependencies(counted):
            question_ids = question_ids[:, :max_question_length]
    return question_ids
