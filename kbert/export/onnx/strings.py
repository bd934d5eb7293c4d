"""Strings in for ONNX: WordPiece inside the graph (`flavour="string"`).

The tokenizer is onnxruntime-extensions' `BertTokenizer` custom op (domain
`ai.onnx.contrib`), built here with `onnx.helper` from the model's own
`BertTokenizer` (its vocabulary, `lowercase`, accent stripping): transformers
is not needed. `onnxruntime_extensions` is imported only for this flavour.

Input contract: one 1-D string tensor per text input (`text`), a batch of
texts, as the SavedModel's string signature takes. The op tokenizes one text
per call and returns 1-D ids, so the graph batches it with a standard ONNX
`Loop` over the batch. Each row is tokenized, truncated to the
preprocessor's `sequence_length` with `[SEP]` kept (`[CLS]`, the first
`sequence_length - 2` word pieces, `[SEP]`, as kbert's packer cuts one text;
done with standard ops, since the op's own `max_length`, run inside the
`Loop`, gave offset values for ids on long texts with onnxruntime-extensions
0.15.2) and padded to `sequence_length` with `[PAD]`; the loop stacks the
rows, and the ids are cast to the int32 inputs of the verified token-id
graph, which follows (`onnx.compose.merge_models`). One text per call (as
MediaPipe takes) would push the batching loop into every app; a batch costs
the app nothing when it sends one text. Every row is padded to
`sequence_length`, as Keras `predict` and the SavedModel pad, so the outputs
are those of `predict` on the same texts. A model that takes a pair of
texts, choices or `[MASK]` positions is refused by name: the op truncates
pairs its own way, and splits literal `[MASK]`.

Where it reads text differently from the model's tokenizer (Hugging Face
`tokenizers`-exact), found on the adversarial texts of
tests/preprocessing/test_tokenizer_parity.py (14 of 32 differ uncased, 10
cased; pinned in tests/export/test_onnx_strings.py):

1. literal special tokens in the text (`[CLS]`, `[MASK]`...) are split as
   punctuation instead of kept whole;
2. a word with a character outside the vocabulary (`movie😂`) keeps the
   pieces before it and one `[UNK]` for the rest, where Hugging Face makes
   the whole word one `[UNK]`;
3. lowercasing and accent stripping use the op's own tables: Greek
   capitals, `İ`, `ẞ`, Vietnamese stacked diacritics (`ế`), Hangul
   syllables (which Hugging Face decomposes into jamo) and the vowel signs
   of Indic and Thai scripts (which it strips as accents) are not mapped;
4. control and format characters (`\\x00`, `\\x7f`, `\\ufeff`, U+FE0F, U+2028,
   private use, U+FFFD) are not deleted.

(2) needs a vocabulary with a `##` piece for every letter, as BERT's have:
with a toy vocabulary without them, ordinary words differ (`theatres` with
only `the`: `the [UNK]` against `[UNK]`) and the exporter refuses the file.
None of these occurs in plain English reviews: on the 37,608 corpus texts
of tests/preprocessing/test_tokenizer_parity.py (Rotten Tomatoes and VADER)
no text differs, uncased (MiniLM's vocabulary) or cased (a vocabulary
trained on the corpus): `CORPUS_DIFFERENCES`, held by
tests/export/test_onnx_strings.py. The exporter verifies every file on the
real verification sentences and `DIVERGENCE_TEXTS` (accented and mobile-style
text), keeps the counts in the export record, warns on a difference in the
latter and refuses the file when one real sentence tokenizes otherwise than
with the model's own tokenizer (`MIN_TOKENIZATION_PARITY`).
"""

import numpy as np

from kbert.export import checks
from kbert.export.checks import (
    DIVERGENCE_TEXTS,
    tokenization_parity,
    tokenizer_divergence,
    warn_on_divergence,
)
from kbert.export.spec import check_one_text_per_row
from kbert.export.verification_data import texts_to_features
from kbert.preprocessing.vocabulary import UNK

DOMAIN = "ai.onnx.contrib"
TOKENIZER_OP = "BertTokenizer"
PREFIX = "kbert_tokenizer/"
# The op's word limit (its WordPiece `[UNK]`s longer words); not an attribute.
OP_MAX_CHARS_PER_WORD = 100
# Of the 37,608 corpus texts (see the module docstring), how many the op
# tokenizes differently from the model's tokenizer (measured; the test holds
# it).
CORPUS_TEXTS = 37608
CORPUS_DIFFERENCES = 0
# Long enough for any divergence text, tokenized whole.
LONG = 1024
# The share of the real verification sentences the op must tokenize as the
# model's own tokenizer does: all of them (none of the 37,608 corpus texts
# differs; the outputs are then checked against Keras `predict` on the same
# texts, which a sentence tokenized otherwise would fail anyway).
MIN_TOKENIZATION_PARITY = 1.0
# What makes the op and the model agree.
REMEDY = (
    "onnxruntime-extensions' BertTokenizer splits literal special tokens and "
    "uses its own Unicode tables; export flavour='token_ids' and tokenize in the "
    "app to serve the model's own tokenizer."
)


def check_string_model(model, spec):
    """Raises `ValueError` naming why `model` cannot take strings in ONNX.

    Example:
    >>> check_string_model(classifier, spec)
    """
    check_one_text_per_row(
        model,
        spec,
        mask_reason="onnxruntime-extensions' tokenizer splits literal [MASK]",
        pairs_reason=" (onnxruntime-extensions' BertTokenizer truncates pairs its own way)",
    )
    tokenizer = model.preprocessor.tokenizer
    if tokenizer.max_input_chars_per_word != OP_MAX_CHARS_PER_WORD:
        raise ValueError(
            f'flavour="string": onnxruntime-extensions\' BertTokenizer cuts words at '
            f"{OP_MAX_CHARS_PER_WORD} characters; the model's tokenizer at "
            f'{tokenizer.max_input_chars_per_word}. Use flavour="token_ids".'
        )


def op_attributes(tokenizer):
    """The `BertTokenizer` op's attributes for a kbert `BertTokenizer`.

    Example:
    >>> attributes = op_attributes(preprocessor.tokenizer)
    >>> {k: v for k, v in attributes.items() if k != "vocab_file"}
    {'do_lower_case': 1, 'strip_accents': 1, 'tokenize_chinese_chars': 1}
    """
    attributes = {
        "vocab_file": "\n".join(tokenizer.get_vocabulary()),
        "do_lower_case": int(tokenizer.lowercase),
        "strip_accents": int(tokenizer._strip),
        "tokenize_chinese_chars": 1,
    }
    if tokenizer.mask_token_id is None:  # the op looks [MASK] up when it loads
        attributes["mask_token"] = UNK
    return attributes


def tokenizer_model(preprocessor, text_input, opset, ir_version, sequence_length=None):
    """The tokenizer graph: `text_input` (batch of strings) in, int32
    `token_ids`, `segment_ids`, `padding_mask` (batch, sequence_length) out.
    `sequence_length`: the preprocessor's by default.

    Example:
    >>> proto = tokenizer_model(preprocessor, "text", 18, 10)
    >>> [o.name for o in proto.graph.output]
    ['token_ids', 'segment_ids', 'padding_mask']
    """
    from onnx import TensorProto, helper  # lazy: a heavy optional library

    tokenizer = preprocessor.tokenizer
    length = sequence_length or preprocessor.sequence_length
    p = PREFIX

    def const(name, values):
        return helper.make_node(
            "Constant",
            [],
            [p + name],
            value=helper.make_tensor(p + name, TensorProto.INT64, [len(values)], values),
        )

    body_nodes = [
        const("zero", [0]),
        const("one", [1]),
        const("minus_one", [-1]),
        const("budget", [length - 2]),
        const("length", [length]),
        const("cls", [tokenizer.cls_token_id]),
        const("sep", [tokenizer.sep_token_id]),
        const("pad_id", [tokenizer.pad_token_id]),
        helper.make_node("Unsqueeze", [p + "i", p + "zero"], [p + "index"]),
        helper.make_node("Gather", [text_input, p + "index"], [p + "one_text"], axis=0),
        helper.make_node(
            TOKENIZER_OP,
            [p + "one_text"],
            [p + "ids", p + "types", p + "mask", p + "offsets"],
            domain=DOMAIN,
            **op_attributes(tokenizer),
        ),
        # [CLS] the first `length - 2` word pieces [SEP], as kbert's packer
        # cuts one text (see the module docstring on the op's `max_length`).
        helper.make_node("Slice", [p + "ids", p + "one", p + "minus_one"], [p + "pieces"]),
        helper.make_node("Slice", [p + "pieces", p + "zero", p + "budget"], [p + "kept"]),
        helper.make_node(
            "Concat", [p + "cls", p + "kept", p + "sep"], [p + "packed"], axis=0
        ),
        helper.make_node("Shape", [p + "packed"], [p + "count"]),
        helper.make_node("Sub", [p + "length", p + "count"], [p + "missing"]),
        helper.make_node("Concat", [p + "zero", p + "missing"], [p + "pads"], axis=0),
        helper.make_node("Pad", [p + "packed", p + "pads", p + "pad_id"], [p + "row_ids"]),
        helper.make_node(
            "ConstantOfShape",
            [p + "count"],
            [p + "ones"],
            value=helper.make_tensor(p + "one_value", TensorProto.INT64, [1], [1]),
        ),
        helper.make_node("Pad", [p + "ones", p + "pads"], [p + "row_mask"]),
        helper.make_node("Mul", [p + "row_mask", p + "zero"], [p + "row_types"]),
        helper.make_node("Identity", [p + "cond"], [p + "cond_out"]),
    ]
    row = [length]
    body = helper.make_graph(
        body_nodes,
        "tokenize_one_text",
        [
            helper.make_tensor_value_info(p + "i", TensorProto.INT64, []),
            helper.make_tensor_value_info(p + "cond", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info(p + "cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info(p + "row_ids", TensorProto.INT64, row),
            helper.make_tensor_value_info(p + "row_types", TensorProto.INT64, row),
            helper.make_tensor_value_info(p + "row_mask", TensorProto.INT64, row),
        ],
    )
    names = ("token_ids", "segment_ids", "padding_mask")
    nodes = [
        helper.make_node("Shape", [text_input], [p + "batch"]),
        const("first", [0]),
        helper.make_node("Gather", [p + "batch", p + "first"], [p + "batch_1"], axis=0),
        helper.make_node("Squeeze", [p + "batch_1"], [p + "trips"]),
        helper.make_node(
            "Constant",
            [],
            [p + "true"],
            value=helper.make_tensor(p + "true", TensorProto.BOOL, [], [True]),
        ),
        helper.make_node(
            "Loop",
            [p + "trips", p + "true"],
            [p + "stacked_" + name for name in names],
            body=body,
        ),
    ]
    nodes += [
        helper.make_node("Cast", [p + "stacked_" + name], [name], to=TensorProto.INT32)
        for name in names
    ]
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.INT32, ["batch", length])
        for name in names
    ]
    graph = helper.make_graph(
        nodes,
        "kbert_tokenizer",
        [helper.make_tensor_value_info(text_input, TensorProto.STRING, ["batch"])],
        outputs,
    )
    proto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)],
        producer_name="kbert",
    )
    proto.ir_version = ir_version
    return proto


def prepend_tokenizer(id_model, preprocessor, spec):
    """The token-id ONNX model `id_model` (a `ModelProto`) with the tokenizer
    graph in front: strings in, the same outputs (and `token_ids` for a
    per-token task, as the string signatures of the other formats)."""
    import onnx  # lazy: a heavy optional library

    versions = {o.domain: o.version for o in id_model.opset_import}
    opset = versions.get("", versions.get("ai.onnx"))
    tokenizer = tokenizer_model(
        preprocessor, spec.text_inputs[0], opset, id_model.ir_version
    )
    merged = onnx.compose.merge_models(
        tokenizer, id_model, io_map=[(name, name) for name in spec.token_inputs]
    )
    if spec.per_token_outputs:  # the ids the per-token outputs index
        token_ids = next(o for o in tokenizer.graph.output if o.name == "token_ids")
        merged.graph.output.append(token_ids)
    merged.graph.name = id_model.graph.name
    del merged.metadata_props[:]
    merged.metadata_props.extend(id_model.metadata_props)
    onnx.checker.check_model(merged)
    return merged


def session_options():
    """`onnxruntime.SessionOptions` with onnxruntime-extensions' custom ops."""
    import onnxruntime  # lazy: a runtime loads only when an artifact is run

    try:
        # It imports torch and transformers when they are installed.
        import onnxruntime_extensions  # lazy: only for a string-flavour file
    except ImportError as error:
        raise ImportError(
            "This ONNX file tokenizes strings with onnxruntime-extensions' "
            "BertTokenizer custom op: pip install onnxruntime-extensions."
        ) from error
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
    return options


class OnnxTokenizer:
    """The string flavour's tokenizer graph on onnxruntime, with the two
    methods `tokenizer_divergence` reads of a kbert `BertTokenizer`
    (`tokenize_tensor(texts).to_list()`, `get_vocabulary()`): ids without
    `[CLS]`, `[SEP]` and padding.

    Example:
    >>> OnnxTokenizer(preprocessor).ids(["A fine film."])["token_ids"][0][:6]
    array([ 2,  6, 31, 32, 12,  3], dtype=int32)
    """

    def __init__(self, preprocessor, sequence_length=None):
        import onnxruntime  # lazy: a runtime loads only when an artifact is run

        self.name = "the ONNX graph"  # for messages: "the ONNX graph's tokenizer"
        self.vocabulary = preprocessor.tokenizer.get_vocabulary()
        proto = tokenizer_model(preprocessor, "text", 18, 8, sequence_length)
        self.session = onnxruntime.InferenceSession(
            proto.SerializeToString(), session_options(), providers=["CPUExecutionProvider"]
        )

    def ids(self, texts):
        """`token_ids`, `segment_ids`, `padding_mask` of `texts` (int32 arrays)."""
        values = self.session.run(None, {"text": np.array(list(texts), dtype=object)})
        return dict(zip(("token_ids", "segment_ids", "padding_mask"), values))

    def tokenize_tensor(self, texts):
        texts = [t.decode("utf-8") for t in texts.numpy()]
        return _Rows(unpadded(self.ids(texts)))

    def get_vocabulary(self):
        return list(self.vocabulary)


class _Rows(list):
    def to_list(self):
        return list(self)


def unpadded(features):
    """Each row's ids between `[CLS]` and `[SEP]` (lists of int).

    Example:
    >>> unpadded({"token_ids": np.array([[2, 7, 8, 3, 0]]),
    ...           "padding_mask": np.array([[1, 1, 1, 1, 0]])})
    [[7, 8]]
    """
    lengths = np.sum(features["padding_mask"], axis=-1)
    return [
        [int(i) for i in row[1 : n - 1]] for row, n in zip(features["token_ids"], lengths)
    ]


def tokenization_check(model, spec, texts):
    """The op's token ids against the model's tokenizer's on `texts` (the
    verification sentences) and on `DIVERGENCE_TEXTS`: the export record's
    `tokenizer` entry. Raises `ExportVerificationError` when fewer than
    `MIN_TOKENIZATION_PARITY` of `texts` agree; warns
    (`TokenizerDivergenceWarning`) on a difference in the others."""
    preprocessor = model.preprocessor
    served = OnnxTokenizer(preprocessor)
    own, _ = texts_to_features(preprocessor, spec, texts)
    got = served.ids(texts[spec.text_inputs[0]])
    parity = checks.check_tokenization_parity(
        tokenization_parity(own["token_ids"], got["token_ids"]),
        MIN_TOKENIZATION_PARITY,
        "ONNX (string)",
        "onnxruntime-extensions' BertTokenizer",
        remedy="(A word with a character no ## piece covers: the op keeps the pieces "
        "before it, the model reads one [UNK]; see kbert.export.onnx.strings.)",
    )
    # Untruncated (as the model's tokenizer there): the longest word-piece
    # count any text may have.
    whole = OnnxTokenizer(preprocessor, sequence_length=LONG)
    divergence = tokenizer_divergence(
        preprocessor.tokenizer, whole, whole.name, DIVERGENCE_TEXTS
    )
    warn_on_divergence(divergence, REMEDY)
    return {
        "op": f"{DOMAIN}.{TOKENIZER_OP} (onnxruntime-extensions)",
        "tokenization_parity": parity,
        "tokenizer_divergence": divergence,
        "corpus_differences": {
            "texts": CORPUS_TEXTS,
            "differ": CORPUS_DIFFERENCES,
            "source": "Rotten Tomatoes + VADER sentences, uncased MiniLM vocabulary",
        },
    }


def string_feeds(spec, texts):
    """`{text input: 1-D object array}` for a batch of texts.

    Example:
    >>> string_feeds(spec, {"text": ["A fine film."]})["text"].dtype
    dtype('O')
    """
    return {name: np.array(list(texts[name]), dtype=object) for name in spec.text_inputs}
