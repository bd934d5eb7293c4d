"""OpenVINO IR export: the verified float32 ONNX file, converted by OpenVINO.

`kbert.export.openvino(model, "out/classifier_ov")` writes a directory with
`openvino_model.xml` and `openvino_model.bin` (float32 weights:
`save_model(..., compress_to_fp16=False)`) and `kbert_export.json`, the
export record. It is made with `openvino.convert_model` from the float32 ONNX
file of `kbert.export.onnx` (itself checked against Keras first) and
verified on OpenVINO's CPU plugin: float32 forced within 1e-4 of Keras at two
shapes, and at the precision the plugin picks for this CPU (bf16 where the
CPU has AVX512_BF16 or AMX) by prediction agreement on held-out reviews.
`quantization="int8"` quantizes it with NNCF on real text
(`kbert.export.openvino.quantization`) and verifies it by agreement.
`flavour="string"` puts the model's WordPiece tokenizer in front
(openvino-tokenizers, `kbert.export.openvino.strings`): texts in.
"""

import os

import numpy as np

from kbert.export import agreement, checks
from kbert.export.formats import (
    OPENVINO_FLAVOURS,
    OPENVINO_QUANTIZATIONS,
    OPENVINO_XML,
)
from kbert.export.onnx.exporter import onnx as export_onnx
from kbert.export.openvino.quantization import quantize_openvino
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.openvino.strings import (
    check_string_model,
    string_tokenizer,
    tokenization_check,
    with_tokenizer,
)
from kbert.export.record import build_record, write_with_record
from kbert.export.spec import export_spec, keras_outputs
from kbert.export.verification_data import (
    source as data_source,
)
from kbert.export.verification_data import (
    verification_data,
    verification_inputs,
)
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory
from kbert.utils.owned_temps import work_directory


def openvino(
    model,
    path,
    flavour="token_ids",
    source=None,
    quantization=None,
    min_agreement=None,
    overwrite=False,
):
    """Exports `model` to a verified OpenVINO IR directory: token ids in, or
    (`flavour="string"`) texts in.

    The `"string"` IR holds the model's WordPiece tokenizer (openvino-tokenizers'
    ops; `kbert.export.openvino.strings`): it takes a batch of strings, cuts
    each to the preprocessor's `sequence_length` as `predict` does, and
    returns the token-id IR's outputs. Before it is written, its tokenizer
    must split at least `MIN_TOKENIZATION_PARITY` (0.99) of the 500 held-out
    reviews into the model's own ids (the counts, and those of accented and
    mobile-style sentences, are in the record's `verification.tokenization`)
    and its outputs must be within 1e-4 of Keras at float32. Exporting it
    needs `openvino-tokenizers` and `transformers` (its converter reads a
    `transformers` tokenizer); running it needs OpenVINO with the
    openvino-tokenizers extension only (`import openvino_tokenizers`, or
    `core.add_extension(...)`: export/README.md, "Strings in OpenVINO").

    Args:
        model: a kbert task model or backbone; `"string"` needs its
            preprocessor and one text per row (not multiple choice, question
            answering or a masked LM).
        path: the directory to write (replaced only after verification).
        flavour: `"token_ids"` (default) or `"string"`.
        source: where the model came from, kept in the export record.
        quantization: None (float32 weights) or `"int8"` (NNCF on real text;
            with `"string"`, the token-id model is quantized, then the
            tokenizer put in front).
        min_agreement: the least share of predictions the model must share
            with Keras at OpenVINO's default precision (and when quantized;
            None: 0.99, or a mean cosine of 0.999 for embeddings).
        overwrite: write over a `path` holding files kbert did not write
            (otherwise refused before any work; kbert's own earlier artifact
            is always replaced).

    Returns:
        The export record (a dict).

    Example:
    >>> record = kbert.export.openvino(classifier, "out/classifier_ov")
    >>> record["verification"]["max_abs_diff"]["probabilities"] < 1e-4
    True
    >>> sorted(os.listdir("out/classifier_ov"))
    ['kbert_export.json', 'openvino_model.bin', 'openvino_model.xml']
    >>> record = kbert.export.openvino(classifier, "out/strings_ov", flavour="string")
    >>> record["inputs"], record["verification"]["tokenization"]["real"]["share"]
    (['text'], 1.0)
    >>> import openvino, openvino_tokenizers  # registers the tokenizer's ops
    >>> ir = openvino.Core().compile_model("out/strings_ov/openvino_model.xml")
    >>> ir(["A fine film.", "Dull."])["probabilities"].shape
    (2, 2)
    """
    if flavour not in OPENVINO_FLAVOURS:
        raise ValueError(
            f"flavour={flavour!r}: OpenVINO export offers {OPENVINO_FLAVOURS}."
        )
    if quantization not in OPENVINO_QUANTIZATIONS:
        raise ValueError(
            f"quantization={quantization!r}: OpenVINO export offers "
            f"{OPENVINO_QUANTIZATIONS}."
        )
    check_target(path, "openvino", overwrite)
    import openvino as ov  # lazy: an optional runtime, only for this format

    model = model.merge_lora()  # a LoRA model exports as the plain model it equals
    spec = export_spec(model)
    strings = flavour == "string"
    if strings:
        check_string_model(model, spec)
    with work_directory("openvino") as work:
        onnx_path = os.path.join(work, "model.onnx")
        onnx_record = export_onnx(model, onnx_path)
        ov_model, quantized = ov.convert_model(onnx_path), None
        converter = f"{onnx_record['converter']} -> openvino.convert_model"
        if quantization == "int8":
            ov_model, quantized = quantize_openvino(model, spec, ov_model, min_agreement)
        if strings:
            ov_model = with_tokenizer(ov_model, model.preprocessor, spec)
            converter += " + openvino_tokenizers.convert_tokenizer"
        with atomic_directory(path) as tmp:
            xml = os.path.join(tmp, OPENVINO_XML)
            ov.save_model(ov_model, xml, compress_to_fp16=False)
            if strings:
                verification = verify_string_ir(model, spec, xml, min_agreement, quantized)
            elif quantized:
                quantized["agreement"] = verify_quantized(model, spec, xml, min_agreement)
            else:
                verification = verify_openvino(model, spec, xml, min_agreement)
            if quantized and not strings:
                verification = {
                    "runtime": quantized["agreement"]["runtime"],
                    "by": "prediction agreement with Keras (quantized.agreement)",
                }
            outputs = list(spec.output_names)
            if strings and spec.per_token_outputs:
                outputs.append("token_ids")
            export_record = build_record(
                "openvino",
                model,
                spec,
                source,
                verification,
                flavour=flavour,
                inputs=list(spec.text_inputs if strings else spec.token_inputs),
                text_inputs=list(spec.text_inputs) if strings else [],
                outputs=outputs,
                sequence_length=model.preprocessor.sequence_length if strings else None,
                converter=converter,
                onnx_verification=onnx_record["verification"],
                quantization=quantization,
            )
            if quantized:
                export_record["quantized"] = quantized
            write_with_record(tmp, "openvino", export_record)
    return export_record


def verify_openvino(model, spec, xml, min_agreement=None):
    """Runs the IR on OpenVINO against the Keras model; returns the summary.

    Example:
    >>> summary = verify_openvino(classifier, spec, onnx_file)  # an .onnx runs too
    >>> summary["runtime"].startswith("OpenVINO"), summary["tolerance"]
    (True, 0.0001)
    """
    data = verification_data(model, spec)
    forced = OpenVinoRunner(xml, precision="f32")
    diffs = {}
    for batch in data.token_batches:
        found = checks.check_close(
            forced(batch),
            keras_outputs(model, batch),
            checks.FLOAT_TOLERANCE,
            f"OpenVINO (f32) at input shape {batch['token_ids'].shape}",
        )
        diffs = checks.merge_diffs(diffs, found)
    summary = {
        "runtime": forced.describe(),
        "inputs": data.source,
        "tolerance": checks.FLOAT_TOLERANCE,
        "max_abs_diff": diffs,
    }
    default = OpenVinoRunner(xml)
    summary["default_precision"] = default.precision
    if default.precision != "f32" and data.texts is not None:
        summary["agreement"] = _agreement(
            model,
            spec,
            None,
            default,
            min_agreement,
            f"OpenVINO at its default precision {default.precision}",
        )
    return summary


def verify_string_ir(model, spec, xml, min_agreement=None, quantized=None):
    """Runs a `"string"` IR on texts against the Keras model; returns the
    verification summary (with `quantized["agreement"]` set when quantized).

    Its tokenizer, compiled alone, gives the token ids Keras runs on: float32
    within 1e-4 on 16 real sentences at three batch shapes (not quantized),
    the tokenization counted against the model's own tokenizer
    (`tokenization_check`), and, at OpenVINO's default precision (or
    quantized), prediction agreement on the 500 held-out reviews.

    Example:
    >>> import openvino as ov
    >>> from kbert.export.openvino.strings import with_tokenizer
    >>> ir = with_tokenizer(ov.convert_model(onnx_file), preprocessor, spec)
    >>> ov.save_model(ir, "strings.xml", compress_to_fp16=False)
    >>> summary = verify_string_ir(classifier, spec, "strings.xml")
    >>> summary["tolerance"], summary["tokenization"]["real"]["texts"]
    (0.0001, 500)
    """
    import openvino as ov  # lazy: an optional runtime, only for this format

    name = spec.text_inputs[0]
    compiled = ov.Core().compile_model(string_tokenizer(model.preprocessor, name), "CPU")

    def tokenize(texts):
        result = compiled(np.array(list(texts), dtype=np.str_))
        return {port.get_any_name(): np.array(result[port]) for port in compiled.outputs}

    default = OpenVinoRunner(xml)
    summary = {"runtime": default.describe(), "default_precision": default.precision}
    if not quantized:
        forced = OpenVinoRunner(xml, precision="f32")
        texts = verification_inputs(spec, 16)[name]
        diffs = {}
        for batch in (texts, texts[:8], texts[:1]):
            used = tokenize(batch)
            got = forced({name: batch})
            context = f"OpenVINO (f32, strings in) on {len(batch)} texts"
            if spec.per_token_outputs:
                checks.check_equal(got, {"token_ids": used["token_ids"]}, context)
            want = keras_outputs(model, used)
            found = checks.check_close(got, want, checks.FLOAT_TOLERANCE, context)
            diffs = checks.merge_diffs(diffs, found)
        summary.update(
            runtime=forced.describe(),
            inputs=f"16 real sentences ({data_source()}), strings in",
            tolerance=checks.FLOAT_TOLERANCE,
            max_abs_diff=diffs,
        )
    reviews = verification_inputs(spec, agreement.AGREEMENT_TEXTS)[name]
    summary["tokenization"] = tokenization_check(
        model, spec, tokenize, reviews, "OpenVINO (strings in)"
    )

    def run(batch, rows):
        texts = [reviews[i] for i in rows]
        return default({name: texts}), tokenize(texts)

    if quantized:
        context = "OpenVINO quantization='int8'"
        quantized["agreement"] = _agreement(
            model, spec, run, default, min_agreement, context
        )
        summary["by"] = "prediction agreement with Keras (quantized.agreement)"
    elif default.precision != "f32":
        context = f"OpenVINO at its default precision {default.precision}"
        summary["agreement"] = _agreement(model, spec, run, default, min_agreement, context)
    return summary


def verify_quantized(model, spec, xml, min_agreement=None):
    """The agreement entry of an int8 IR at OpenVINO's default precision;
    raises `ExportVerificationError` below `min_agreement`."""
    runner = OpenVinoRunner(xml)
    return _agreement(
        model, spec, None, runner, min_agreement, "OpenVINO quantization='int8'"
    )


def _agreement(model, spec, run, runner, min_agreement, context):
    """`agreement.verify_agreement` of the IR compiled in `runner`, run by
    `run(batch, rows)` (default: token ids in)."""
    return agreement.verify_agreement(
        model,
        spec,
        run or (lambda batch, _: (runner(batch), batch)),
        min_agreement,
        context,
        runtime=runner.describe(),
    )


def keras_openvino(model, path, **kwargs):
    """Keras' `model.export(path, format="openvino")`: a directory, not an `.xml`."""
    if str(path).endswith(".xml"):
        raise ValueError(
            f"model.export({str(path)!r}, format='openvino'): kbert writes an OpenVINO "
            "IR directory (openvino_model.xml, .bin and its export record); pass a "
            "directory path."
        )
    return openvino(model, path, **kwargs)
