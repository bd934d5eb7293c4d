"""WordPiece vocabularies: reading, checking, writing and training."""

import os

from kbert.preprocessing import normalizer
from kbert.preprocessing.layer import as_string_batch

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
REQUIRED_TOKENS = (PAD, UNK, CLS, SEP)
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
VOCABULARY_FILE = "vocab.txt"


def load_vocabulary(vocabulary):
    """A checked token list from a `vocab.txt` path or a sequence of tokens.

    Like Hugging Face, trailing whitespace of each file line is dropped and
    the id of a token is its line number.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        if not os.path.isfile(vocabulary):
            raise ValueError(f"Vocabulary file not found: {os.fspath(vocabulary)!r}.")
        with open(vocabulary, encoding="utf-8") as file:
            tokens = [line.rstrip() for line in file.read().splitlines()]
        while tokens and not tokens[-1]:
            tokens.pop()
    elif isinstance(vocabulary, (list, tuple)):
        tokens = list(vocabulary)
    else:
        raise ValueError(
            "`vocabulary` must be a path to a vocab.txt file or a list of "
            f"tokens; received {type(vocabulary).__name__}."
        )
    check_vocabulary(tokens)
    return tokens


def check_vocabulary(tokens):
    """Raise `ValueError` unless `tokens` is a usable BERT vocabulary."""
    for index, token in enumerate(tokens):
        if not isinstance(token, str) or not token:
            raise ValueError(
                f"Vocabulary entry {index} is {token!r}: every token must be a "
                "non-empty string."
            )
    missing = [token for token in REQUIRED_TOKENS if token not in tokens]
    if missing:
        raise ValueError(
            f"The vocabulary has no {', '.join(missing)}: a BERT vocabulary "
            f"needs {', '.join(REQUIRED_TOKENS)} (and usually {MASK})."
        )
    if len(set(tokens)) != len(tokens):
        seen, duplicates = set(), []
        for token in tokens:
            if token in seen:
                duplicates.append(token)
            seen.add(token)
        raise ValueError(f"Duplicate vocabulary tokens: {duplicates[:10]}.")


def save_vocabulary(tokens, path):
    """Write one token per line, the format of BERT's `vocab.txt`."""
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(f"{token}\n" for token in tokens)


def train_vocabulary(
    texts,
    vocabulary_size,
    lowercase=True,
    strip_accents=None,
    reserved_tokens=SPECIAL_TOKENS,
    batch_size=1024,
    learn_params=None,
):
    """Learn a WordPiece vocabulary from texts.

    Texts are first normalized and split into words exactly as
    `BertTokenizer(lowercase=..., strip_accents=...)` will do it, then
    tensorflow-text's `bert_vocab_from_dataset` learns the word pieces. As
    with that learner, the size is a target: the result is usually a little
    under `vocabulary_size`. The learner is pure Python: about 2 minutes for
    the 37,608 texts of `kbert.data` at 8,000 tokens on 2 cores;
    `learn_params={"num_iterations": 2}` roughly halves that.

    Args:
        texts: a list of str, or a `tf.data.Dataset` of strings.
        vocabulary_size: target number of tokens, reserved ones included.
        lowercase, strip_accents: as in `BertTokenizer`.
        reserved_tokens: placed first, in order; must hold `[PAD]`, `[UNK]`,
            `[CLS]` and `[SEP]`.
        learn_params: passed to tf-text's learner (`Params` fields).

    Returns:
        The token list, `reserved_tokens` first.

    Example:
    >>> tokens = train_vocabulary(["a first text", "a second one"], 50)
    >>> tokens[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    # lazy: TF only to train a vocabulary
    import tensorflow as tf
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

    reserved_tokens = list(reserved_tokens)
    missing = [token for token in REQUIRED_TOKENS if token not in reserved_tokens]
    if missing:
        raise ValueError(f"`reserved_tokens` must include {', '.join(missing)}.")
    if isinstance(texts, tf.data.Dataset):
        dataset = texts
    else:
        dataset = tf.data.Dataset.from_tensor_slices(as_string_batch(texts)[0])
    strip = lowercase if strip_accents is None else strip_accents

    def words(batch):
        normalized = normalizer.normalize(batch, lowercase, strip)
        return tf.strings.reduce_join(
            normalizer.split_words_with_offsets(normalized)[0], axis=-1, separator=" "
        )

    # The learner's own BERT pre-tokenizer then only splits on our spaces.
    dataset = dataset.batch(batch_size).map(words).unbatch()
    return bert_vocab_from_dataset.bert_vocab_from_dataset(
        dataset,
        vocab_size=vocabulary_size,
        reserved_tokens=reserved_tokens,
        bert_tokenizer_params={"lower_case": False},
        learn_params=learn_params or {},
    )
