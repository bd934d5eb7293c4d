"""Strings in for OpenVINO: the model's WordPiece tokenizer inside the IR.

`kbert.export.openvino(model, path, flavour="string")` puts a tokenizer
built by `openvino-tokenizers` in front of the token-id IR: the IR takes a
batch of strings (`[?]`, named as the model's text input, `text`) and
returns the token-id IR's outputs (`logits`, `probabilities`...; per-token
models also the `token_ids` they ran on, as TFLite's `"string"` flavour).

The tokenizer is built from the model's own preprocessor (vocabulary,
`lowercase`, `strip_accents`, `max_input_chars_per_word`, `sequence_length`):
a Hugging Face `tokenizers.BertWordPieceTokenizer` of the same settings (the
reference the model's exact tokenizer is tested against), wrapped as a
`transformers.PreTrainedTokenizerFast` and converted by
`openvino_tokenizers.convert_tokenizer`. Texts are cut to the preprocessor's
`sequence_length` as `predict` cuts them (`[CLS]` and `[SEP]` kept; silently:
the IR has no warnings) and padded to the longest text of the batch.

Where it differs from the model's tokenizer (`kbert.preprocessing`'s exact
mode, i.e. Hugging Face `tokenizers`): none of the 37,608 corpus texts of
tests/preprocessing (uncased MiniLM vocabulary and a cased one, measured by
tests/export/test_openvino_strings.py); on adversarial text, the final sigma
`ς` is case-folded to `σ`, a private-use character (`\\ue000`) makes its word
`[UNK]`, and the word length limit counts UTF-8 bytes, not characters. The
exporter measures it again on every export (`tokenization_check`) and
refuses below `MIN_TOKENIZATION_PARITY`.

Export needs `openvino-tokenizers` and `transformers` (the converter reads a
`transformers` tokenizer); running the IR needs OpenVINO with the
openvino-tokenizers extension only (`import openvino_tokenizers` in Python,
`core.add_extension(<libopenvino_tokenizers.so>)` elsewhere).
"""

import importlib.util

import numpy as np

from kbert.export.checks import DIVERGENCE_TEXTS, ExportVerificationError
from kbert.export.spec import check_one_text_per_row
from kbert.export.verification_data import token_features

# The IR's tokenizer outputs -> the token-id IR's inputs.
TOKENIZER_OUTPUTS = {
    "input_ids": "token_ids",
    "token_type_ids": "segment_ids",
    "attention_mask": "padding_mask",
}
# The least share of the real verification sentences the IR's tokenizer must
# split into the ids of the model's own: 0 of 37,608 corpus texts differ, so
# anything below 99% is another vocabulary, casing or accent handling than
# the model was trained with, and the export is refused.
MIN_TOKENIZATION_PARITY = 0.99


# What exporting the string flavour imports (running the IR needs openvino and
# openvino_tokenizers only): pip name by module.
EXPORT_LIBRARIES = {
    "openvino_tokenizers": "openvino-tokenizers",
    "transformers": "transformers",
    "tokenizers": "tokenizers",
}


def check_string_model(model, spec):
    """Raises `ValueError` for a model the string flavour cannot serve, and
    `ImportError` naming what exporting it needs and is not installed, before
    any work.

    Example:
    >>> check_string_model(classifier, spec)
    """
    missing = [
        name
        for module, name in EXPORT_LIBRARIES.items()
        if not importlib.util.find_spec(module)
    ]
    if missing:
        raise ImportError(
            'kbert.export.openvino(..., flavour="string") builds the IR\'s tokenizer '
            "with openvino-tokenizers, which converts a Hugging Face tokenizer: "
            f"pip install {' '.join(missing)} to export (running the IR needs only "
            "openvino and openvino-tokenizers)."
        )
    check_one_text_per_row(
        model, spec, mask_reason="it takes mask positions besides the text"
    )


def _transformers_tokenizer(preprocessor):
    """The preprocessor's tokenizer as a `transformers.PreTrainedTokenizerFast`."""
    try:
        import tokenizers  # lazy: export-time only, for this flavour
        import transformers  # lazy: export-time only, for this flavour
    except ImportError as error:
        raise ImportError(
            'kbert.export.openvino(..., flavour="string") builds the IR\'s tokenizer '
            "with openvino-tokenizers, which converts a Hugging Face tokenizer: "
            "install transformers and tokenizers to export (running the IR needs "
            f"neither). ({error})"
        ) from error
    tokenizer = preprocessor.tokenizer
    vocabulary = tokenizer.get_vocabulary()
    strip = tokenizer.strip_accents
    if tokenizer.normalization == "mediapipe":  # lowercase, accents kept
        strip = False
    wordpiece = tokenizers.BertWordPieceTokenizer(
        {token: i for i, token in enumerate(vocabulary)},
        lowercase=tokenizer.lowercase,
        strip_accents=strip,
        wordpieces_prefix="##",
    )
    backend = wordpiece._tokenizer
    backend.model.max_input_chars_per_word = tokenizer.max_input_chars_per_word
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]" if "[MASK]" in vocabulary else None,
        model_max_length=preprocessor.sequence_length,
        padding_side="right",
        truncation_side="right",
        model_input_names=list(TOKENIZER_OUTPUTS),
    )


def string_tokenizer(preprocessor, text_input="text"):
    """The OpenVINO model of `preprocessor`'s tokenizer and packing: a batch of
    strings `[?]` (named `text_input`) in; `token_ids`, `segment_ids`,
    `padding_mask` (int32 `[batch, longest]`) out.

    Example:
    >>> import openvino as ov
    >>> compiled = ov.Core().compile_model(string_tokenizer(preprocessor), "CPU")
    >>> compiled(["A fine film."])["token_ids"]
    array([[ 2,  6, 31, 32, 12,  3]], dtype=int32)
    """
    import openvino as ov  # lazy: an optional runtime, only for this format

    try:
        import openvino_tokenizers  # lazy: only for the string flavour
    except ImportError as error:
        raise ImportError(
            'flavour="string" puts the tokenizer inside the IR with openvino-tokenizers: '
            f"pip install openvino-tokenizers (the release of openvino). ({error})"
        ) from error
    ov_tokenizer = openvino_tokenizers.convert_tokenizer(
        _transformers_tokenizer(preprocessor),
        with_detokenizer=False,
        truncation=True,
        tokenizer_output_type=ov.Type.i32,
    )
    (parameter,) = ov_tokenizer.get_parameters()
    parameter.set_friendly_name(text_input)
    parameter.output(0).get_tensor().set_names({text_input})
    for output in ov_tokenizer.outputs:
        (name,) = [n for n in output.get_names() if n in TOKENIZER_OUTPUTS]
        output.get_tensor().set_names({TOKENIZER_OUTPUTS[name]})
    return ov_tokenizer


def with_tokenizer(ov_model, preprocessor, spec):
    """`ov_model` (token ids in) with the tokenizer of `preprocessor` in front:
    strings in, the same outputs (+ `token_ids` for per-token outputs).

    Example:
    >>> import openvino as ov
    >>> ir = with_tokenizer(ov.convert_model(onnx_file), preprocessor, spec)
    >>> [port.get_any_name() for port in ir.inputs], len(ir.outputs)
    (['text'], 2)
    """
    import openvino as ov  # lazy: an optional runtime, only for this format

    tokenizer = string_tokenizer(preprocessor, spec.text_inputs[0])
    produced = {port.get_any_name(): port for port in tokenizer.outputs}
    (text,) = tokenizer.get_parameters()
    for parameter in ov_model.get_parameters():
        names = parameter.output(0).get_names()
        (name,) = [n for n in spec.token_inputs if n in names] or [None]
        if name is None:
            raise ValueError(
                f"The OpenVINO model's input {sorted(names)} is not one of the token "
                f"inputs {list(spec.token_inputs)} the tokenizer gives."
            )
        source = produced[name].get_node().input_value(0)  # before its Result
        if parameter.get_element_type() != source.get_element_type():
            source = ov.opset13.convert(source, parameter.get_element_type()).output(0)
        for target in parameter.output(0).get_target_inputs():
            target.replace_source_output(source)
    results = list(ov_model.get_results())
    if spec.per_token_outputs:
        ids = ov.opset13.result(produced["token_ids"].get_node().input_value(0))
        ids.output(0).get_tensor().set_names({"token_ids"})
        results.append(ids)
    model = ov.Model(results, [text], ov_model.get_friendly_name() + "_with_tokenizer")
    # The tokenizer's state (ReadValue/Assign: e.g. whether to add special
    # tokens) stays in the graph only as the model's sinks.
    model.add_sinks(tokenizer.get_sinks())
    model.validate_nodes_and_infer_types()
    return model


def tokenization_check(model, spec, tokenizer_runner, texts, context):
    """The export record's `tokenization` entry: how many of `texts` (real
    sentences) and of `DIVERGENCE_TEXTS` (accented, mobile-style) the IR's
    tokenizer (`tokenizer_runner(texts) -> features`) splits into the ids
    of the model's own; raises `ExportVerificationError` when the share of
    real sentences is below `MIN_TOKENIZATION_PARITY`.

    Example:
    >>> import openvino as ov
    >>> compiled = ov.Core().compile_model(string_tokenizer(preprocessor), "CPU")
    >>> def tokenize(texts):
    ...     result = compiled(texts)
    ...     return {port.get_any_name(): result[port] for port in compiled.outputs}
    >>> entry = tokenization_check(classifier, spec, tokenize, ["A fine film."], "")
    >>> entry["real"], entry["minimum"]
    ({'texts': 1, 'same': 1, 'share': 1.0}, 0.99)
    """
    entry = {
        "deployment_tokenizer": "openvino-tokenizers",
        "minimum": MIN_TOKENIZATION_PARITY,
    }
    for key, rows in (("real", list(texts)), ("accented_mobile", list(DIVERGENCE_TEXTS))):
        inputs = {spec.text_inputs[0]: rows}
        own = token_features(model.preprocessor, spec, inputs)
        served = tokenizer_runner(rows)
        differing = [i for i in range(len(rows)) if not _same_row(own, served, i)]
        entry[key] = {
            "texts": len(rows),
            "same": len(rows) - len(differing),
            "share": (len(rows) - len(differing)) / len(rows),
        }
        if differing:
            entry[key]["example"] = rows[differing[0]]
    if entry["real"]["share"] < MIN_TOKENIZATION_PARITY:
        raise ExportVerificationError(
            f"{context}: the IR's tokenizer (openvino-tokenizers) splits only "
            f"{entry['real']['same']} of {entry['real']['texts']} real sentences as "
            f"the model's own tokenizer does (share {entry['real']['share']:.3f} < "
            f"MIN_TOKENIZATION_PARITY = {MIN_TOKENIZATION_PARITY}); e.g. "
            f"{entry['real']['example']!r}. The IR would not serve the tokenization "
            "the model was trained on; it is not written."
        )
    return entry


def _same_row(own, served, row):
    """Row `row` of the model's features (padded to its sequence length) and
    the IR tokenizer's (padded to the longest text) hold the same tokens."""
    for name in ("token_ids", "segment_ids", "padding_mask"):
        a, b = np.asarray(own[name][row]), np.asarray(served[name][row])
        length = max(
            int(own["padding_mask"][row].sum()), int(served["padding_mask"][row].sum())
        )
        if a[:length].shape != b[:length].shape or not np.array_equal(
            a[:length], b[:length]
        ):
            return False
    return True


def describe(entry):
    """One line for `kbert verify`: what the exporter measured.

    Example:
    >>> print(describe({"real": {"texts": 500, "same": 500},
    ...                 "accented_mobile": {"texts": 12, "same": 12}}))
    openvino-tokenizers at export: 500/500 real and 12/12 accented/mobile sentences ...
    """
    real, other = entry["real"], entry["accented_mobile"]
    return (
        f"openvino-tokenizers at export: {real['same']}/{real['texts']} real and "
        f"{other['same']}/{other['texts']} accented/mobile sentences tokenized as by "
        "the model"
    )
