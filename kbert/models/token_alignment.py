"""Words in, word pieces out: BERT inputs plus the word each piece came from.

Each text is split on whitespace into words and every word is tokenized on
its own (Hugging Face's `is_split_into_words=True`), so a piece's word is
known exactly. Runs as TensorFlow ops, inside `tf.data` on every backend.
"""

import re

import numpy as np

from kbert.utils.long_texts import count_cut

IGNORE_LABEL = -100
NO_WORD = -1


def split_words(texts):
    """Whitespace-split words of each text: a ragged `(batch, (words))` tensor.

    Example:
    >>> split_words(tf.constant(["Ada  Lovelace", "hi"])).to_list()
    [[b'Ada', b'Lovelace'], [b'hi']]
    """
    import tensorflow as tf  # lazy: TF only for raw text

    return tf.strings.split(texts)


def align_words(tokenizer, texts, sequence_length, word_labels=None):
    """Pack whitespace-split texts as `[CLS] pieces [SEP]` and align word labels.

    Args:
        tokenizer: a `BertTokenizer`.
        texts: 1-D `tf.string` tensor.
        sequence_length: packed length; pieces past `sequence_length - 2`
            are cut (counted by a `TruncationWarning` when run eagerly).
        word_labels: optional int `(batch, max_words)` tensor, one label per
            word, padded with -100.

    Returns:
        A dict of int32 `(batch, sequence_length)` tensors: `token_ids`,
        `segment_ids`, `padding_mask`, `word_ids` (the word index of each
        piece, -1 for special and padding positions), `first_piece` (1 on the
        first piece of each word) and, with `word_labels`, `labels` (the word's
        label on its first piece, -100 elsewhere).

    Example:
    >>> out = align_words(tokenizer, tf.constant(["foxes fox"]), 6, tf.constant([[3, 4]]))
    >>> [tokenizer.id_to_token(i) for i in out["token_ids"].numpy()[0]]
    ['[CLS]', 'fox', '##es', 'fox', '[SEP]', '[PAD]']
    >>> out["word_ids"].numpy().tolist(), out["labels"].numpy().tolist()
    ([[-1, 0, 0, 1, -1, -1]], [[-100, 3, -100, 4, -100, -100]])
    """
    import tensorflow as tf  # lazy: TF only for raw text

    pieces, word_ids, first_piece = word_pieces(tokenizer, texts)
    batch = tf.shape(texts)[0]
    pieces_per_text = tf.cast(pieces.row_lengths(), tf.int32)
    budget = sequence_length - 2
    counted = count_cut(pieces_per_text + 2, sequence_length)

    def pack(values, cls_value, sep_value, pad_value):
        with tf.control_dependencies(counted):
            values = values[:, :budget]
        column = tf.ones([batch, 1], tf.int32)
        packed = tf.concat([column * cls_value, values, column * sep_value], axis=1)
        return packed.to_tensor(default_value=pad_value, shape=[None, sequence_length])

    token_ids = pack(
        pieces, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    )
    word_ids = pack(word_ids, NO_WORD, NO_WORD, NO_WORD)
    first_piece = pack(first_piece, 0, 0, 0)
    length = tf.minimum(pieces_per_text, budget) + 2
    outputs = {
        "token_ids": token_ids,
        "segment_ids": tf.zeros_like(token_ids),
        "padding_mask": tf.cast(
            tf.range(sequence_length)[None, :] < length[:, None], tf.int32
        ),
        "word_ids": word_ids,
        "first_piece": first_piece,
    }
    if word_labels is not None:
        outputs["labels"] = word_to_token_labels(word_labels, word_ids, first_piece)
    return outputs


def word_pieces(tokenizer, texts):
    """`(pieces, word_ids, first_piece)`: ragged int32 `(batch, (pieces))`
    tensors of each text's word pieces, the word of each piece, and 1 on the
    first piece of each word.

    Example:
    >>> pieces, word_ids, first = word_pieces(tokenizer, tf.constant(["foxes fox"]))
    >>> word_ids.to_list(), first.to_list()
    ([[0, 0, 1]], [[1, 0, 1]])
    """
    import tensorflow as tf  # lazy: TF only for raw text

    words = split_words(texts)
    pieces = tokenizer.tokenize_tensor(words.flat_values)
    pieces_per_word = tf.cast(pieces.row_lengths(), tf.int32)
    pieces_per_text = tf.math.segment_sum(
        pieces_per_word, tf.cast(words.value_rowids(), tf.int32)
    )
    # segment_sum drops trailing texts with no words: pad back to the batch.
    batch = tf.shape(texts)[0]
    pieces_per_text = tf.concat(
        [pieces_per_text, tf.zeros([batch - tf.shape(pieces_per_text)[0]], tf.int32)], 0
    )
    word_index = tf.ragged.range(tf.cast(words.row_lengths(), tf.int32)).flat_values
    piece_index = tf.ragged.range(pieces_per_word).flat_values

    def per_text(flat_values):
        return tf.RaggedTensor.from_row_lengths(flat_values, pieces_per_text)

    return (
        per_text(tf.cast(pieces.flat_values, tf.int32)),
        per_text(tf.repeat(word_index, pieces_per_word)),
        per_text(tf.cast(piece_index == 0, tf.int32)),
    )


def word_to_token_labels(word_labels, word_ids, first_piece):
    """Each word's label on its first piece, -100 on the other positions.

    Example:
    >>> word_to_token_labels(tf.constant([[3, 4]]), tf.constant([[-1, 0, 0, 1, -1]]),
    ...                      tf.constant([[0, 1, 0, 1, 0]])).numpy()
    array([[-100, 3, -100, 4, -100]], dtype=int32)
    """
    import tensorflow as tf  # lazy: TF only for raw text

    word_labels = tf.cast(word_labels, tf.int32)
    max_words = tf.shape(word_labels)[1]
    # A word past the label columns (labels shorter than words) is ignored.
    has_label = (first_piece > 0) & (word_ids >= 0) & (word_ids < max_words)
    index = tf.clip_by_value(word_ids, 0, tf.maximum(max_words - 1, 0))
    padded = tf.concat([word_labels, tf.fill([tf.shape(word_labels)[0], 1], -100)], 1)
    labels = tf.gather(padded, index, batch_dims=1)
    return tf.where(has_label, labels, IGNORE_LABEL)


def texts_from_words(inputs):
    """Raw token-classification inputs as a list of whitespace-joined texts.

    Accepts one text, a list of texts, or a list of word lists (joined with
    single spaces; words must not contain whitespace).

    Example:
    >>> texts_from_words([["Ada", "Lovelace"], "hello world"])
    ['Ada Lovelace', 'hello world']
    """
    if isinstance(inputs, str):
        return [inputs]
    if not isinstance(inputs, (list, tuple, np.ndarray)):
        raise ValueError(
            "Token classification takes a text, a list of texts or a list of word "
            f"lists; received {type(inputs).__name__} {inputs!r:.80}."
        )
    texts = []
    for index, item in enumerate(inputs):
        if isinstance(item, bytes):
            item = item.decode("utf-8")
        if isinstance(item, str):
            texts.append(item)
            continue
        if not isinstance(item, (list, tuple, np.ndarray)):
            raise ValueError(
                f"Example {index} is {type(item).__name__} {item!r:.80}; expected a "
                "text or a list of words."
            )
        words = [w.decode("utf-8") if isinstance(w, bytes) else w for w in item]
        for position, word in enumerate(words):
            if not isinstance(word, str):
                raise ValueError(
                    f"Example {index}, word {position} is {type(word).__name__} "
                    f"{word!r:.80}; expected a string."
                )
        if any(not word or any(c.isspace() for c in word) for word in words):
            raise ValueError(
                f"Example {index}: words must be non-empty and hold no whitespace; "
                f"received {words!r:.120}."
            )
        texts.append(" ".join(words))
    return texts


def pad_word_labels(labels, texts, label2id=None):
    """Word labels as an int32 `(batch, max_words)` array padded with -100.

    `labels` holds one list per text with one label per whitespace-split
    word: ids, or tag strings mapped through `label2id`. A 2-D integer array
    is taken as already padded.

    Example:
    >>> pad_word_labels([[1, 0], [2]], ["Ada Lovelace", "hi"])
    array([[   1,    0],
           [   2, -100]], dtype=int32)
    """
    if isinstance(labels, np.ndarray) and labels.ndim == 2:
        return labels.astype("int32")  # already padded
    labels = list(labels)
    if len(labels) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(labels)} label lists.")
    rows = []
    for index, (row, text) in enumerate(zip(labels, texts)):
        row = [label2id[x] if isinstance(x, str) and label2id else x for x in row]
        if any(isinstance(x, str) for x in row):
            raise ValueError(
                f"Example {index}: string labels {row!r:.80} need the model's id2label."
            )
        num_words = len(split_words_py(text))
        if len(row) != num_words:
            raise ValueError(
                f"Example {index} has {num_words} words but {len(row)} labels: "
                f"{text!r:.80}."
            )
        rows.append([int(x) for x in row])
    width = max([len(row) for row in rows] + [1])
    padded = np.full((len(rows), width), IGNORE_LABEL, dtype="int32")
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    return padded


def split_words_py(text):
    """The words `split_words` finds, in Python (ASCII whitespace, as TF splits).

    Example:
    >>> split_words_py("Ada\\u00a0Lovelace  wrote")
    ['Ada\\xa0Lovelace', 'wrote']
    """
    return [word for word in re.split(r"[ \t\n\v\f\r]+", text) if word]
