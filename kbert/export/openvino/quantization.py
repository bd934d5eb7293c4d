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

Attention stays float (`attention_nodes`): only the weight MatMuls are int8.
Where the plugin's default precision is bf16 (AVX512_BF16, AMX) it fuses int8
attention into one kernel that runs its float part in bf16 whatever the IR
asks, and the demo classifier's int8 IR agreed with Keras on 0.976 of the
held-out reviews (0.996 at f32); with attention in float, 0.996 at bf16 and
0.994 at f32, for 2% of the int8 IR's speed at bf16 (Xeon with AMX,
2026-11-29). An IR holds on the CPU it is deployed to, not only on the one it
was exported on.
"""

import contextlib
import logging
import sys

from kbert.export.onnx.quantization import (
    CALIBRATION_TEXTS,
    calibration_feeds,
    calibration_source,
)
from kbert.utils.quiet import logger_level


def quantize_openvino(model, spec, ov_model, count=CALIBRATION_TEXTS):
    """`(int8 ov.Model, the record's "quantized" entry)` for the float32
    `ov_model` converted from `model`'s ONNX file.

    Example:
    >>> import openvino as ov
    >>> int8, summary = quantize_openvino(classifier, spec, ov.convert_model(onnx_file), 8)
    >>> summary["method"]
    'nncf int8 (transformer, attention in float)'
    >>> summary["calibration"]
    '8 real texts (Rotten Tomatoes training)'
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
    # NNCF's progress bars are progress, not output: on stderr; its INFO
    # lines (one per ignored attention node) are not shown.
    with logger_level("nncf", logging.WARNING), contextlib.redirect_stdout(sys.stderr):
        quantized = nncf.quantize(
            ov_model,
            dataset,
            model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(feeds),
            ignored_scope=nncf.IgnoredScope(
                names=attention_nodes(ov_model),
                types=["ScaledDotProductAttention"],
                validate=False,  # one of the two forms is absent
            ),
        )
    summary = {
        "method": "nncf int8 (transformer, attention in float)",
        "nncf": nncf.__version__,
        "calibration": calibration_source(feeds),
    }
    return quantized, summary


def attention_nodes(ov_model):
    """The names of `ov_model`'s MatMuls between two activations (scores
    and their weighted sum: how tf2onnx and jax2onnx write attention; the
    PyTorch exporter writes one ScaledDotProductAttention instead).

    Example:
    >>> import openvino as ov
    >>> len(attention_nodes(ov.convert_model(onnx_file)))  # tf2onnx's: 2 per layer
    4
    """
    return [
        op.get_friendly_name()
        for op in ov_model.get_ops()
        if op.get_type_name() == "MatMul"
        and all(
            op.input_value(i).get_node().get_type_name() != "Constant" for i in range(2)
        )
    ]
