"""int8 OpenVINO IR, quantized by NNCF on real text.

`kbert.export.openvino(model, path, quantization="int8")` converts the
verified float32 ONNX file as usual, then quantizes the OpenVINO model with
NNCF's post-training quantization (`nncf.quantize`): `model_type=TRANSFORMER`
(int8 MatMuls with SmoothQuant, LayerNorm, softmax and GELU left in float),
statistics from real training reviews packed by the model's preprocessor
(`calibration_feeds`, each text at its own length). The CPU plugin runs the
int8 MatMuls on VNNI/AMX where the CPU has them. The exporter then checks
prediction agreement with Keras on held-out reviews and refuses below
`min_agreement`.
"""

import contextlib
import sys

from kbert.export.onnx.quantization import (
    CALIBRATION_TEXTS,
    calibration_feeds,
    calibration_source,
)


def quantize_openvino(model, spec, ov_model, count=CALIBRATION_TEXTS):
    """`(int8 ov.Model, the record's "quantized" entry)` for the float32
    `ov_model` converted from `model`'s ONNX file.

    Example:
    >>> import openvino as ov
    >>> int8, summary = quantize_openvino(classifier, spec, ov.convert_model(onnx_file), 8)
    >>> summary["method"], summary["calibration"]
    ('nncf int8 (transformer)', '8 real texts (Rotten Tomatoes training)')
    """
    import nncf  # lazy: an optional library, only for int8 OpenVINO artifacts

    feeds = calibration_feeds(model, spec, count)
    types = {
        port.get_any_name(): port.get_element_type().to_dtype() for port in ov_model.inputs
    }
    missing = [name for name in types if name not in feeds[0]]
    if missing:
        raise ValueError(
            f"The OpenVINO model's inputs {missing} are not among the calibration "
            f"features {sorted(feeds[0])}."
        )
    dataset = nncf.Dataset(
        feeds,
        lambda feed: {name: feed[name].astype(dtype) for name, dtype in types.items()},
    )
    # NNCF's progress bars are progress, not output: on stderr.
    with contextlib.redirect_stdout(sys.stderr):
        quantized = nncf.quantize(
            ov_model,
            dataset,
            model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(feeds),
        )
    summary = {
        "method": "nncf int8 (transformer)",
        "nncf": nncf.__version__,
        "calibration": calibration_source(feeds),
    }
    return quantized, summary
