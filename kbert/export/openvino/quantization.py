"""int8 OpenVINO IR, quantized by NNCF on real text.

`kbert.export.openvino(model, path, quantization="int8")` converts the
verified float32 ONNX file as usual, then quantizes the OpenVINO model with
NNCF's post-training quantization (`nncf.quantize`): `model_type=TRANSFORMER`
(int8 MatMuls with SmoothQuant, LayerNorm, softmax and GELU left in float),
statistics from real training reviews packed by the model's preprocessor
(`calibration_feeds`, each text at its own length). The CPU plugin runs the
int8 MatMuls on VNNI/AMX where the CPU has them; where it has neither, its
int8 products saturate (`kbert.utils.cpu.int8_products_saturate`) and every
layer's weights take 7 bits (NNCF's overflow fix). The IR is then checked by
prediction agreement with Keras on held-out reviews and refused below
`min_agreement`.

Attention stays float (`attention_nodes`): only the weight MatMuls are int8.
Where the plugin's default precision is bf16 (AVX512_BF16, AMX) it fuses int8
attention into one kernel that runs its float part in bf16 whatever the IR
asks, and the demo classifier's int8 IR agreed with Keras on 0.976 of the
held-out reviews (0.996 at f32); with attention in float, 0.996 at bf16 and
0.994 at f32, for 2% of the int8 IR's speed at bf16 (Xeon with AMX,
2026-11-29). An IR holds on the CPU it is deployed to, not only on the one it
was exported on.

More stays float only as far as the model needs (`FLOAT_SCOPES`, least
first: each rung costs speed), searched as ONNX `dynamic_int8` searches its
outlier ratios: the first rung whose outputs on `SEARCH_TEXTS` training
reviews agree with the float IR's (f32) at the bound (both run on length
batches of 32 texts: static int8 scales leave a text's outputs independent
of its batch), and then pass the held-out check, is kept; the last rung is
always checked. A classifier keeps the first rung; an embedder's bound, a
mean cosine of 0.999, needs more.
"""

import contextlib
import logging
import sys

from kbert.export import agreement
from kbert.export.onnx.quantization import (
    CALIBRATION_TEXTS,
    SEARCH_TEXTS,
    calibration_agreement,
    calibration_feeds,
    calibration_source,
    held_out_agreement,
    length_batched,
)
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.utils.cpu import cpu_name, int8_products_saturate
from kbert.utils.quiet import logger_level

# What stays float, least first. Measured on all-MiniLM-L6-v2 (AMD EPYC Zen 4,
# bf16 default, 2026-12-05), mean cosine with the float IR on SEARCH_TEXTS
# and throughput-mode speed against the float IR: attention 0.99771 and
# 1.64x; + feed-forward outputs 0.99903 and 1.36x; + feed-forward inputs
# 0.99954 and 1.19x. One layer's feed-forward output in float alone gave
# 0.99780-0.99817: every layer adds about the same.
FLOAT_SCOPES = (
    "attention",
    "attention and feed-forward outputs",
    "attention and feed-forward",
)


def quantize_openvino(
    model,
    spec,
    ov_model,
    min_agreement=None,
    count=CALIBRATION_TEXTS,
    search_count=SEARCH_TEXTS,
):
    """`(int8 ov.Model, the record's "quantized" entry)` for the float32
    `ov_model` converted from `model`'s ONNX file; raises
    `ExportVerificationError` when no rung of `FLOAT_SCOPES` keeps
    `min_agreement` (None: `agreement.min_agreement_for` the model) on the
    held-out reviews. The entry's `float_search` lists what each try measured.

    Example:
    >>> import openvino as ov
    >>> float_ir = ov.convert_model(onnx_file)
    >>> int8, summary = quantize_openvino(classifier, spec, float_ir, 0.5, 8, 16)
    >>> summary["method"]
    'nncf int8 (transformer, attention in float)'
    >>> summary["calibration"], summary["agreement"]["min_agreement"]
    ('8 real texts (Rotten Tomatoes training)', 0.5)
    >>> [try_["kept_in_float"] for try_ in summary["float_search"]]
    ['attention']
    """
    import nncf  # lazy: an optional library, only for int8 OpenVINO artifacts

    search_feeds = calibration_feeds(model, spec, max(count, search_count))
    feeds = search_feeds[:count]
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
    float_runner = OpenVinoRunner(ov_model, precision="f32")
    # NNCF's int8 scales are static: a text's outputs do not depend on its batch.
    search_batches = length_batched(search_feeds)
    float_outputs = [float_runner(batch) for batch in search_batches]
    bound = agreement.min_agreement_for(spec, min_agreement)
    intermediate_dim = model.backbone.intermediate_dim
    # NNCF's overflow fix (7-bit weights) on every layer where this CPU's int8
    # products saturate, not on the first only (NNCF's default).
    saturate = int8_products_saturate()
    overflow_fix = nncf.OverflowFix.ENABLE if saturate else nncf.OverflowFix.FIRST_LAYER
    advanced = nncf.AdvancedQuantizationParameters(overflow_fix=overflow_fix)
    tried = []
    for number, scope in enumerate(FLOAT_SCOPES):
        last = number == len(FLOAT_SCOPES) - 1
        # NNCF's progress bars are progress, not output: on stderr; its INFO
        # lines (one per ignored node) are not shown.
        with logger_level("nncf", logging.WARNING), contextlib.redirect_stdout(sys.stderr):
            quantized = nncf.quantize(
                ov_model,
                dataset,
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(feeds),
                advanced_parameters=advanced,
                ignored_scope=nncf.IgnoredScope(
                    names=float_nodes(ov_model, scope, intermediate_dim),
                    types=["ScaledDotProductAttention"],
                    validate=False,  # one of the two forms of attention is absent
                ),
            )
        runner = OpenVinoRunner(quantized)
        value = calibration_agreement(spec, float_outputs, runner, search_batches)
        tried.append({"kept_in_float": scope, "calibration_agreement": value})
        if not last and value is not None and value < bound:
            continue
        held_out = held_out_agreement(
            model,
            spec,
            runner,
            bound,
            "OpenVINO quantization='int8'",
            runner.describe(),
            tried,
            last,
        )
        if held_out is not None:
            break
    summary = {
        "method": f"nncf int8 (transformer, {scope} in float)",
        "nncf": nncf.__version__,
        "overflow_fix": "all layers" if saturate else "first layer",
        "cpu": cpu_name(),
        "calibration": calibration_source(feeds),
        "agreement": held_out,
        "float_search": tried,
    }
    return quantized, summary


def float_nodes(ov_model, scope, intermediate_dim):
    """The names of the MatMuls of `ov_model` that `scope` (one of
    `FLOAT_SCOPES`) keeps float: attention's, then the feed-forward outputs
    (the weight MatMuls from `intermediate_dim` wide), then its inputs too
    (those to `intermediate_dim` wide).

    Example:
    >>> import openvino as ov
    >>> float_ir = ov.convert_model(onnx_file)  # 2 layers, intermediate_dim 16
    >>> [len(float_nodes(float_ir, scope, 16)) for scope in FLOAT_SCOPES]
    [4, 6, 8]
    """
    if scope not in FLOAT_SCOPES:
        raise ValueError(f"scope={scope!r}: one of {FLOAT_SCOPES}.")
    names = attention_nodes(ov_model)
    rung = FLOAT_SCOPES.index(scope)
    for op in ov_model.get_ops():
        if op.get_type_name() != "MatMul" or op.get_friendly_name() in names:
            continue
        wide_in = _last_dim(op.input(0)) == intermediate_dim
        wide_out = _last_dim(op.output(0)) == intermediate_dim
        if (rung >= 1 and wide_in) or (rung >= 2 and wide_out):
            names.append(op.get_friendly_name())
    return names


def _last_dim(port):
    shape = port.get_partial_shape()
    last = shape[shape.rank.get_length() - 1] if shape.rank.is_static else None
    return last.get_length() if last is not None and last.is_static else None


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
