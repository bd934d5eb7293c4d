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
"""

import os

from kbert.export import agreement, checks
from kbert.export.formats import DEFAULT_MIN_AGREEMENT, OPENVINO_QUANTIZATIONS, OPENVINO_XML
from kbert.export.onnx.exporter import onnx as export_onnx
from kbert.export.openvino.quantization import quantize_openvino
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.export.record import build_record, write_with_record
from kbert.export.spec import export_spec, keras_outputs
from kbert.export.verification_data import verification_data
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory
from kbert.utils.owned_temps import work_directory


def openvino(
    model,
    path,
    source=None,
    quantization=None,
    min_agreement=DEFAULT_MIN_AGREEMENT,
    overwrite=False,
):
    """Exports `model` (token ids in) to a verified OpenVINO IR directory.

    Args:
        model: a kbert task model or backbone.
        path: the directory to write (replaced only after verification).
        source: where the model came from, kept in the export record.
        quantization: None (float32 weights) or `"int8"` (NNCF on real text).
        min_agreement: the least share of predictions the model must share
            with Keras at OpenVINO's default precision (and when quantized).
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
    """
    if quantization not in OPENVINO_QUANTIZATIONS:
        raise ValueError(
            f"quantization={quantization!r}: OpenVINO export offers "
            f"{OPENVINO_QUANTIZATIONS}."
        )
    check_target(path, "openvino", overwrite)
    import openvino as ov  # lazy: an optional runtime, only for this format

    model = model.merge_lora()  # a LoRA model exports as the plain model it equals
    spec = export_spec(model)
    with work_directory("openvino") as work:
        onnx_path = os.path.join(work, "model.onnx")
        onnx_record = export_onnx(model, onnx_path)
        ov_model, quantized = ov.convert_model(onnx_path), None
        if quantization == "int8":
            ov_model, quantized = quantize_openvino(model, spec, ov_model)
        with atomic_directory(path) as tmp:
            xml = os.path.join(tmp, OPENVINO_XML)
            ov.save_model(ov_model, xml, compress_to_fp16=False)
            if quantized:
                quantized["agreement"] = verify_quantized(model, spec, xml, min_agreement)
                verification = {
                    "runtime": quantized["agreement"]["runtime"],
                    "by": "prediction agreement with Keras (quantized.agreement)",
                }
            else:
                verification = verify_openvino(model, spec, xml, min_agreement)
            export_record = build_record(
                "openvino",
                model,
                spec,
                source,
                verification,
                inputs=list(spec.token_inputs),
                converter=f"{onnx_record['converter']} -> openvino.convert_model",
                onnx_verification=onnx_record["verification"],
                quantization=quantization,
            )
            if quantized:
                export_record["quantized"] = quantized
            write_with_record(tmp, "openvino", export_record)
    return export_record


def verify_openvino(model, spec, xml, min_agreement=DEFAULT_MIN_AGREEMENT):
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
            default,
            min_agreement,
            f"OpenVINO at its default precision {default.precision}",
        )
    return summary


def verify_quantized(model, spec, xml, min_agreement=DEFAULT_MIN_AGREEMENT):
    """The agreement entry of an int8 IR at OpenVINO's default precision;
    raises `ExportVerificationError` below `min_agreement`."""
    runner = OpenVinoRunner(xml)
    return _agreement(model, spec, runner, min_agreement, "OpenVINO quantization='int8'")


def _agreement(model, spec, runner, min_agreement, context):
    """`agreement.verify_agreement` of the IR compiled in `runner`."""
    return agreement.verify_agreement(
        model,
        spec,
        lambda batch, _: (runner(batch), batch),
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
