"""BertTokenizer: BERT WordPiece tokenization as a Keras layer."""

import os

import keras
import numpy as np

from kbert.preprocessing import exact_tokenization, hf_tokenizer_files
from kbert.preprocessing.layer import PreprocessingLayer, as_string_batch, to_backend
from kbert.preprocessing.vocabulary import (
    CLS,
    MASK,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    UNK,
    VOCABULARY_FILE,
    load_vocabulary,
    save_vocabulary,
)
from kbert.sources import resolve_source
from kbert.utils.artifact_kinds import check_target

NORMALIZATIONS = ("exact", "tflite", "mediapipe")


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenizer(PreprocessingLayer):
    """BERT WordPiece tokenizer built on tensorflow-text, inside the graph.

    Text in, token ids out (no `[CLS]`/`[SEP]`: see `BertPreprocessor`). Runs
    in TF graphs (tf.function, SavedModel) and in `tf.data` on every Keras
    backend. The vocabulary is saved as a `vocab.txt` asset, not in the
    config.

    Two normalizations, chosen at construction and saved in the config:

    - `"exact"` (default) gives the ids of Hugging Face `tokenizers`'
      `BertWordPieceTokenizer` / `BertTokenizerFast` with the same vocabulary
      and `lowercase` / `strip_accents`: literal special tokens (`[MASK]`...)
      kept whole, control and format characters deleted, CJK ideographs
      split, NFD + accent stripping, lowercasing, punctuation split, `[UNK]`
      for words over `max_input_chars_per_word` characters. Identical on the
      37,608 corpus texts and every adversarial test case. Uses TF string ops
      (RE2, ICU) that TFLite lacks. The one known gap is Unicode versions:
      `tokenizers`' character categories are older than TensorFlow's, and
      568 code points (of 1,112,063) tokenize differently, all in scripts,
      marks and punctuation added to Unicode since 2016 (Adlam, Newa,
      Znamenny notation, Arabic Extended-B...) or unassigned.
    - `"tflite"`: tf-text's fused `FastBertTokenizer`, which converts to
      TFLite (builtin ops + tf-text custom ops). It needs `strip_accents` to
      equal `lowercase`. It differs from Hugging Face on:
      1. case folding (uncased only): NFKC case folding instead of
         lowercasing (`ß` -> `ss`, `ς` -> `σ`, `™` -> `tm`, full-width and
         compatibility characters folded);
      2. control and format characters (`\\x00`, `\\u200b`, `\\u200d`,
         `\\ufeff`...) split words instead of being deleted;
      3. the word length limit counts UTF-8 bytes, not characters;
      4. literal `[CLS]`, `[SEP]`, `[MASK]`, `[UNK]`, `[PAD]` in the text are
         split as punctuation instead of mapping to their ids;
      5. the Unicode-version gap of the exact mode.
      Measured on the 37,608 corpus texts (tests/preprocessing/test_tokenizer_parity.py,
      run with -s): 46 differ uncased, all from (1); 0 differ cased.
      Invalid UTF-8 is rejected in eager calls only (the exact mode also
      fails on it inside a graph).
    - `"mediapipe"`: the exact mode with MediaPipe's normalization, which
      lowercases but keeps accents (`lowercase=True, strip_accents=False`:
      `café` stays `café` where uncased BERT reads `cafe`). Train with it
      ("train as you serve") to make a model tokenize as the MediaPipe
      `TextClassifier` / `TextEmbedder` it is exported to will.

    Offsets (`tokenize_with_offsets`) are in characters (Unicode code
    points, the indices of a Python `str`) of the input, as in `tokenizers`.

    Args:
        vocabulary: path to a `vocab.txt`, or a list of tokens. Must hold
            `[PAD]`, `[UNK]`, `[CLS]` and `[SEP]`.
        lowercase: lowercase the text (uncased vocabularies).
        strip_accents: NFD and drop non-spacing marks; `None` follows
            `lowercase`, as in Hugging Face.
        normalization: `"exact"`, `"tflite"` or `"mediapipe"`.
        max_input_chars_per_word: longer words become `[UNK]`.

    Example:
    >>> tokenizer = BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "fox", "##es"])
    >>> ids = tokenizer(["The foxes"])  # [[4, 5, 6]]; a tf.RaggedTensor on TensorFlow
    >>> tokenizer.detokenize(ids)
    ['the foxes']
    """

    def __init__(
        self,
        vocabulary=None,
        lowercase=True,
        strip_accents=None,
        normalization="exact",
        max_input_chars_per_word=100,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if normalization not in NORMALIZATIONS:
            raise ValueError(
                f"`normalization` must be one of {NORMALIZATIONS}; received "
                f"{normalization!r}."
            )
        if normalization == "mediapipe":
            lowercase, strip_accents = True, False
        self.lowercase = bool(lowercase)
        self.strip_accents = None if strip_accents is None else bool(strip_accents)
        self.normalization = normalization
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        if normalization == "tflite" and self._strip != self.lowercase:
            raise ValueError(
                'normalization="tflite" lowercases and strips accents together '
                f"(tf-text's FastBertTokenizer); lowercase={self.lowercase} with "
                f"strip_accents={self.strip_accents} needs "
                'normalization="exact".'
            )
        self._vocabulary = None
        self._tf_tokenizer = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    @property
    def _strip(self):
        return self.lowercase if self.strip_accents is None else self.strip_accents

    # Vocabulary -----------------------------------------------------------

    def set_vocabulary(self, vocabulary):
        """Set the vocabulary from a `vocab.txt` path or a list of tokens."""
        self._vocabulary = load_vocabulary(vocabulary)
        self._token_to_id = {token: i for i, token in enumerate(self._vocabulary)}
        self._tf_tokenizer = None

    def _require_vocabulary(self):
        if self._vocabulary is None:
            raise ValueError(
                "This BertTokenizer has no vocabulary: pass `vocabulary=` or "
                "call `set_vocabulary` / `load_assets`."
            )

    def get_vocabulary(self):
        """The token list (id = index)."""
        self._require_vocabulary()
        return list(self._vocabulary)

    def vocabulary_size(self):
        self._require_vocabulary()
        return len(self._vocabulary)

    def token_to_id(self, token):
        self._require_vocabulary()
        if token not in self._token_to_id:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._token_to_id[token]

    def id_to_token(self, token_id):
        self._require_vocabulary()
        if not 0 <= int(token_id) < len(self._vocabulary):
            raise ValueError(f"Id {token_id} is outside [0, {len(self._vocabulary) - 1}].")
        return self._vocabulary[int(token_id)]

    @property
    def pad_token_id(self):
        return self.token_to_id(PAD)

    @property
    def unk_token_id(self):
        return self.token_to_id(UNK)

    @property
    def cls_token_id(self):
        return self.token_to_id(CLS)

    @property
    def sep_token_id(self):
        return self.token_to_id(SEP)

    @property
    def mask_token_id(self):
        """Id of `[MASK]`, or None when the vocabulary has none."""
        self._require_vocabulary()
        return self._token_to_id.get(MASK)

    # Tokenization ---------------------------------------------------------

    def _tf_wordpiece(self):
        """The tf-text tokenizer, built once, eagerly.

        Its model buffer becomes a constant; made inside a tf.data or
        tf.function trace it would belong to that graph only.
        """
        # lazy: TF only when text is tokenized
        import tensorflow as tf
        import tensorflow_text as tft

        self._require_vocabulary()
        if self._tf_tokenizer is None:
            with tf.init_scope():
                if self.normalization != "tflite":
                    # Up to 4 UTF-8 bytes per character: the character limit
                    # is applied before WordPiece.
                    self._tf_tokenizer = tft.FastWordpieceTokenizer(
                        self._vocabulary,
                        max_bytes_per_word=4 * self.max_input_chars_per_word,
                        token_out_type=tf.int32,
                        unknown_token=UNK,
                        no_pretokenization=True,
                    )
                else:
                    self._tf_tokenizer = tft.FastBertTokenizer(
                        self._vocabulary,
                        max_bytes_per_word=self.max_input_chars_per_word,
                        token_out_type=tf.int32,
                        unknown_token=UNK,
                        lower_case_nfd_strip_accents=self.lowercase,
                    )
        return self._tf_tokenizer

    def tokenize_tensor(self, text, with_offsets=False):
        """Ragged int32 ids for a 1-D `tf.string` tensor (TF in, TF out).

        With `with_offsets`, also ragged int32 start and end offsets of each
        token in the input string, in characters (Unicode code points, the
        indices of a Python `str`), end exclusive, as in `tokenizers`.
        """
        import tensorflow as tf  # lazy: TF only when text is tokenized

        wordpiece = self._tf_wordpiece()
        if self.normalization != "tflite":
            return exact_tokenization.tokenize(
                text,
                wordpiece,
                special_tokens=[
                    (token, self._token_to_id[token])
                    for token in SPECIAL_TOKENS
                    if token in self._token_to_id
                ],
                unk_id=self.unk_token_id,
                lowercase=self.lowercase,
                strip_accents=self._strip,
                max_chars_per_word=self.max_input_chars_per_word,
                with_offsets=with_offsets,
            )
        if not with_offsets:
            return wordpiece.tokenize(text)
        ids, starts, ends = wordpiece.tokenize_with_offsets(text)
        # Byte offsets to character offsets: count the characters that start
        # before each byte offset.
        _, char_bytes = tf.strings.unicode_decode_with_offsets(text, "UTF-8")
        char_bytes = char_bytes.to_tensor(default_value=tf.int64.max)

        def to_chars(byte_offsets):
            dense = byte_offsets.to_tensor()
            chars = tf.searchsorted(char_bytes, dense, side="left")
            return tf.RaggedTensor.from_tensor(
                tf.cast(chars, tf.int32), lengths=ids.row_lengths()
            )

        return ids, to_chars(starts), to_chars(ends)

    def tokenize(self, inputs):
        """Token ids: a ragged tensor (a list of lists on JAX/torch eagerly)."""
        text, batched = as_string_batch(inputs)
        ids = self.tokenize_tensor(text)
        return to_backend(ids if batched else ids[0])

    def tokenize_with_offsets(self, inputs):
        """`(ids, starts, ends)`: ids and character offsets of each token.

        Offsets are in characters (code points) of the input, end
        exclusive; `text[start:end]` is the token's source text.
        """
        text, batched = as_string_batch(inputs)
        outputs = self.tokenize_tensor(text, with_offsets=True)
        if not batched:
            outputs = tuple(output[0] for output in outputs)
        return to_backend(outputs)

    def detokenize(self, token_ids):
        """Join tokens with spaces and glue `##` pieces, per sequence.

        Accepts a list of ids, a list of lists, or a (ragged) int tensor;
        `[PAD]` ids are dropped.
        """
        import tensorflow as tf  # lazy: TF only for text

        self._require_vocabulary()
        if isinstance(token_ids, tf.RaggedTensor) or tf.is_tensor(token_ids):
            ids = token_ids
        elif isinstance(token_ids, (list, tuple)) and any(
            isinstance(row, (list, tuple, np.ndarray)) for row in token_ids
        ):
            ids = tf.ragged.constant(token_ids, dtype=tf.int32)
        else:
            ids = tf.constant(keras.ops.convert_to_numpy(token_ids), tf.int32)
        unbatched = ids.shape.rank == 1
        if unbatched:
            ids = ids[None]
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        ids = tf.ragged.boolean_mask(ids, ids != self.pad_token_id)
        tokens = tf.gather(tf.constant(self._vocabulary), tf.cast(ids, tf.int32))
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " ##", "")
        if tf.executing_eagerly():
            text = [value.decode("utf-8") for value in text.numpy()]
            return text[0] if unbatched else text
        return text[0] if unbatched else text

    def call(self, inputs):
        return self.tokenize(inputs)

    def compute_output_spec(self, inputs):
        shape = tuple(inputs.shape)
        if len(shape) == 2 and shape[1] == 1:
            shape = shape[:1]
        return keras.KerasTensor(shape + (None,), dtype="int32", ragged=True)

    # Saving ----------------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": None,  # saved as an asset, see save_assets
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "normalization": self.normalization,
                "max_input_chars_per_word": self.max_input_chars_per_word,
            }
        )
        return config

    def save_assets(self, dir_path):
        self._require_vocabulary()
        save_vocabulary(self._vocabulary, os.path.join(dir_path, VOCABULARY_FILE))

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, VOCABULARY_FILE))

    @classmethod
    def from_preset(cls, directory, **kwargs):
        """A tokenizer from a directory of Hugging Face or kbert files.

        See `read_tokenizer_files`; keyword arguments override what the files
        say (e.g. `normalization="tflite"`).

        Example:
        >>> BertTokenizer.from_preset("all_minilm_l6_v2").vocabulary_size()
        30522
        """
        arguments = hf_tokenizer_files.read_tokenizer_files(resolve_source(directory))
        arguments.update(kwargs)
        return cls(**arguments)

    def save_to_preset(self, directory, overwrite=False):
        """Write `vocab.txt` and an HF-style `tokenizer_config.json`.

        Into a new directory or one of kbert's presets or HF directories; one
        holding other files is refused unless `overwrite=True`.
        """
        check_target(directory, "tokenizer", overwrite)
        self._require_vocabulary()
        hf_tokenizer_files.write_tokenizer_files(
            directory, self._vocabulary, self.lowercase, self.strip_accents
        )
