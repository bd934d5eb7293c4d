"""BertPreprocessor: strings to packed BERT inputs, as a Keras layer."""

import keras

from kbert.preprocessing import hf_tokenizer_files, packer
from kbert.preprocessing.layer import PreprocessingLayer, as_string_batch, to_backend
from kbert.preprocessing.tokenizer import BertTokenizer
from kbert.sources import resolve_source
from kbert.utils.artifact_kinds import check_target
from kbert.utils.long_texts import count_cut


def _is_segment_list(x):
    """A tuple of segments, or a list of tensors (Keras turns the tuple of a
    functional call into a list); a list of strings is one segment."""
    if isinstance(x, tuple):
        return True
    return (
        isinstance(x, list)
        and len(x) in (1, 2)
        and all(hasattr(part, "shape") and hasattr(part, "dtype") for part in x)
    )


@keras.saving.register_keras_serializable(package="kbert")
class BertPreprocessor(PreprocessingLayer):
    """Tokenize one or two segments and pack `[CLS] A [SEP] (B [SEP])`.

    Returns a dict of int32 `(batch, sequence_length)` tensors `token_ids`,
    `segment_ids` (0 for `[CLS] A [SEP]`, 1 for `B [SEP]`) and
    `padding_mask` (1 for real tokens), the input of `BertBackbone`. Built
    from dense TF ops only, so that with a `normalization="tflite"`
    tokenizer the whole layer converts to TFLite.

    Called eagerly, it counts the texts that `sequence_length` cuts and
    warns about them once per call (`kbert.TruncationWarning`).

    Inputs: a string, a list / 1-D array / TF tensor of strings (one
    segment), or a tuple of two of those (sentence pairs; a list of two
    tensors or arrays is read as a pair too). Works in a
    TF-backend functional model on `keras.Input(shape=(), dtype="string")`
    and in `tf.data` on every backend: `ds.map(preprocessor)` also accepts
    `(x, y)` and `(x, y, sample_weight)` elements and passes `y` and
    `sample_weight` through (for pairs, nest them: `((a, b), y)`).

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: the packed length, special tokens included.
        truncation: `"longest_first"` (Hugging Face's default: cut the longer
            segment first; an odd budget gives the longer one the extra
            token), `"only_first"` or `"only_second"`.
        return_offsets: also return `offsets_start` / `offsets_end`, the
            character (code point) span of each token in its segment's
            string, end exclusive; `(0, 0)` for special and padding tokens,
            as Hugging Face's `offset_mapping`. Not TFLite-convertible.

    Example:
    >>> tokenizer = BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "fox", "##es"])
    >>> preprocessor = BertPreprocessor(tokenizer, sequence_length=6)
    >>> keras.ops.convert_to_numpy(preprocessor(["The foxes"])["token_ids"])
    array([[2, 4, 5, 6, 3, 0]], dtype=int32)
    """

    def __init__(
        self,
        tokenizer,
        sequence_length=128,
        truncation="longest_first",
        return_offsets=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(tokenizer, BertTokenizer):
            raise ValueError(
                f"`tokenizer` must be a BertTokenizer; received {type(tokenizer).__name__}."
            )
        if truncation not in packer.TRUNCATIONS:
            raise ValueError(
                f"`truncation` must be one of {packer.TRUNCATIONS}; received "
                f"{truncation!r}."
            )
        if int(sequence_length) < 2:
            raise ValueError(f"sequence_length must be >= 2: {sequence_length}.")
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.truncation = truncation
        self.return_offsets = bool(return_offsets)

    def _segments(self, x):
        """`([1-D string tensors], batched)` from one or two segments."""
        if _is_segment_list(x):
            if len(x) not in (1, 2):
                raise ValueError(
                    f"A tuple input holds one or two segments; received {len(x)}."
                )
            parts = [
                as_string_batch(segment, f"segment {i}") for i, segment in enumerate(x)
            ]
            sizes = [part[0].shape[0] for part in parts]
            if len(sizes) == 2 and None not in sizes and sizes[0] != sizes[1]:
                raise ValueError(
                    f"The two segments must hold as many strings: {sizes[0]} "
                    f"and {sizes[1]}."
                )
            return [part[0] for part in parts], parts[0][1]
        text, batched = as_string_batch(x)
        return [text], batched

    def preprocess(self, x):
        """Packed features as TF tensors (what `call` returns in a graph)."""
        import tensorflow as tf  # lazy: TF only when text is tokenized

        segments, batched = self._segments(x)
        if len(segments) == 2:  # sizes known only when the graph runs
            tf.debugging.assert_equal(
                tf.shape(segments[0]),
                tf.shape(segments[1]),
                message="The two segments must hold as many strings.",
            )
        tokenized = [
            self.tokenizer.tokenize_tensor(text, with_offsets=self.return_offsets)
            for text in segments
        ]
        if self.return_offsets:
            ids = [result[0] for result in tokenized]
            offsets = [result[1:] for result in tokenized]
        else:
            ids, offsets = tokenized, None
        lengths = sum(part.row_lengths() for part in ids) + len(ids) + 1
        with tf.control_dependencies(count_cut(lengths, self.sequence_length)):
            outputs = packer.pack(
                ids,
                self.sequence_length,
                cls_id=self.tokenizer.cls_token_id,
                sep_id=self.tokenizer.sep_token_id,
                pad_id=self.tokenizer.pad_token_id,
                truncation=self.truncation,
                offsets=offsets,
            )
        if not batched:
            outputs = {key: value[0] for key, value in outputs.items()}
        return outputs

    def call(self, x, y=None, sample_weight=None):
        outputs = to_backend(self.preprocess(x))
        return keras.utils.pack_x_y_sample_weight(outputs, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None):
        first = x[0] if _is_segment_list(x) else x
        shape = tuple(first.shape)
        if len(shape) == 2 and shape[1] == 1:
            shape = shape[:1]
        keys = ["token_ids", "segment_ids", "padding_mask"]
        if self.return_offsets:
            keys += ["offsets_start", "offsets_end"]
        spec = {
            key: keras.KerasTensor(shape + (self.sequence_length,), dtype="int32")
            for key in keys
        }
        return keras.utils.pack_x_y_sample_weight(spec, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.layers.serialize(self.tokenizer),
                "sequence_length": self.sequence_length,
                "truncation": self.truncation,
                "return_offsets": self.return_offsets,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.layers.deserialize(config["tokenizer"])
        return cls(**config)

    @classmethod
    def from_preset(cls, directory, **kwargs):
        """A preprocessor from a directory of Hugging Face or kbert files.

        The tokenizer comes from `BertTokenizer.from_preset`;
        `sequence_length` and `truncation` from `preprocessor_config.json`
        (else `tokenizer.json`'s truncation length, else 128). Keyword
        arguments override both, tokenizer ones included (`lowercase`,
        `strip_accents`, `normalization`, `max_input_chars_per_word`).

        Example:
        >>> preprocessor = BertPreprocessor.from_preset(minilm_dir, sequence_length=64)
        >>> preprocessor.sequence_length, preprocessor.tokenizer.lowercase
        (64, True)
        """
        tokenizer_keys = ("lowercase", "strip_accents", "normalization")
        tokenizer_keys += ("max_input_chars_per_word", "vocabulary")
        tokenizer_kwargs = {k: kwargs.pop(k) for k in tokenizer_keys if k in kwargs}
        directory = resolve_source(directory)
        config = hf_tokenizer_files.read_preprocessor_config(directory)
        arguments = {
            key: config[key]
            for key in ("sequence_length", "truncation", "return_offsets")
            if key in config
        }
        arguments.update(kwargs)
        tokenizer = BertTokenizer.from_preset(directory, **tokenizer_kwargs)
        return cls(tokenizer, **arguments)

    def save_to_preset(self, directory, overwrite=False):
        """Write the tokenizer files and `preprocessor_config.json`.

        Into a new directory or one of kbert's presets or HF directories; one
        holding other files is refused unless `overwrite=True`.
        """
        check_target(directory, "tokenizer", overwrite)
        self.tokenizer.save_to_preset(directory, overwrite=overwrite)
        hf_tokenizer_files.write_preprocessor_config(
            directory,
            {
                "sequence_length": self.sequence_length,
                "truncation": self.truncation,
            },
        )
