"""Hugging Face's BERT normalizer and pre-tokenizer as TensorFlow string ops.

`tokenizers`' `BertNormalizer` (clean text, pad CJK ideographs, optionally
NFD + drop non-spacing marks, optionally lowercase) followed by its
`BertPreTokenizer` (split on whitespace, isolate punctuation), written with
RE2 regular expressions, ICU NFD and ICU lowercasing so that it runs inside
any TensorFlow graph (tf.function, tf.data, SavedModel). None of these ops
exist in TFLite: the TFLite flavour of `BertTokenizer` uses tf-text's fused
normalizer instead.
"""

# Removed by clean_text: NUL, U+FFFD and "other" characters (Cc, Cf, Co;
# not Cn) except tab, newline and carriage return, which become spaces.
CONTROL = r"[\x{0}\x{FFFD}\p{Cf}\p{Co}]|[^\P{Cc}\t\n\r]"
# Rust's char::is_whitespace (Unicode White_Space) minus the Cc members that
# clean_text already removed (\x0B, \x0C, \x85), and minus the plain space
# itself, which would only be replaced by itself (and cost time).
WHITESPACE = (
    r"[\t\n\r\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}"
    r"\x{3000}]"
)
# The ranges of tokenizers' `is_chinese_char` (note 2B920, not 2B820).
CJK = (
    r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B920}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]"
)
# tokenizers' `is_bert_punc`: ASCII punctuation or Unicode category P*.
PUNCTUATION = r"[!-/:-@\[-`{-~\p{P}]"


def normalize(strings, lowercase, strip_accents):
    """Apply `BertNormalizer(clean_text=True, handle_chinese_chars=True)`.

    `strings` is a string tensor of any shape (flat values of a ragged one
    included); returns the normalized strings, same shape.
    """
    # lazy: TF only when text is tokenized
    import tensorflow as tf
    import tensorflow_text as tft

    strings = tf.strings.regex_replace(strings, CONTROL, "")
    strings = tf.strings.regex_replace(strings, WHITESPACE, " ")
    strings = tf.strings.regex_replace(strings, CJK, r" \0 ")
    if strip_accents:
        strings = tft.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
    if lowercase:
        # tokenizers lowercases character by character; ICU's toLower would
        # turn a word-final capital sigma into the final form ς.
        strings = tf.strings.regex_replace(strings, "Σ", "σ")
        strings = tf.strings.lower(strings, encoding="utf-8")
    return strings


def split_words_with_offsets(strings):
    """`BertPreTokenizer` on normalized text: words and their byte offsets.

    After `normalize`, every whitespace character is a plain space.
    Returns ragged `(words, starts, ends)` with one more dimension.
    """
    import tensorflow_text as tft  # lazy: TF only when text is tokenized

    return tft.regex_split_with_offsets(
        strings, f" |{PUNCTUATION}", keep_delim_regex_pattern=PUNCTUATION
    )
