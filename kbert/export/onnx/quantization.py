"""Quantized ONNX files for BERT, made with `onnxruntime.quantization`.

`kbert.export.onnx(model, path, quantization=...)` exports float32, checks
it against the Keras model within 1e-4, then quantizes that file with one of
these recipes and verifies the result by prediction agreement on real text
(`kbert.export.agreement`):

- `"dynamic_int8"` (recommended): int8 weights per output channel, uint8
  activations quantized at run time (`quantize_dynamic`, onnxruntime's
  `MatMulInteger`), dense layers (MatMul) only: embeddings (Gather),
  LayerNorm, softmax, the attention products and the task head stay
  float32. Activation channels that are outliers on real text (see
  `kbert.export.onnx.outliers`) bypass the int8 product in float32, only
  as far as the model needs: `OUTLIER_RATIOS` are tried in turn, no bypass
  first (each bypassed channel costs speed), and the first file whose
  predictions on `SEARCH_TEXTS` training texts agree with the float32
  file's at `min_agreement`, and then pass the held-out check, is kept.
  On CPUs without VNNI or AMX the weights take 7 bits (`recipe_for`).
- `"int8"`: static int8 activations too, ranges calibrated on real text
  (`quantize_static`, QDQ, percentile calibration, after `quant_pre_process`),
  with the same outlier channels in float32. Measured below the default
  agreement on MiniLM: refused unless `min_agreement=` accepts it.
- `"float16"`: float16 weights and compute (`onnxruntime.transformers.float16`),
  float32 inputs and outputs; half the file.

`QuantizationRecipe` spells each out; `benchmarks/onnx_quantization.py`
measures these and the alternatives (per-tensor weights, reduce_range,
MinMax/entropy calibration, QOperator, MatMulNBits) it was chosen from.
"""

import dataclasses
import os

import numpy as np

from kbert.export import agreement
from kbert.export.checks import ExportVerificationError
from kbert.export.formats import ONNX_QUANTIZATIONS as QUANTIZATIONS
from kbert.export.onnx.outliers import head_matmuls, split_outlier_channels
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.verification_data import (
    checked_features,
    inputs_of,
    representative_texts,
    token_features,
)
from kbert.utils.cpu import cpu_name, int8_products_saturate
from kbert.utils.owned_temps import work_directory
from kbert.utils.strings import string_list

CALIBRATION_TEXTS = 256
# dynamic_int8's outlier ratios, least bypass first (None: none). Measured on
# the demo classifier, Intel Xeon with AMX, 1,281 held-out reviews, against
# onnxruntime float32: no bypass 2.10x at 0.9859 agreement, ratio 8 1.85x at
# 0.9930, ratio 3 1.63x at 0.9938 (benchmarks/onnx_quantization.py).
OUTLIER_RATIOS = (None, 8.0, 6.0, 4.0, 3.0)
# The search compares each try with the float32 file on this many training
# reviews (the first CALIBRATION_TEXTS of them calibrate): on 256, one
# agreement's spread (0.006 at 0.99) hid the ratios' differences (the demo
# classifier: ratio 8 0.9805 on 256, 0.9902 on 1,024, 0.9922 on 2,048).
SEARCH_TEXTS = 1024
# A recipe's weight_type -> onnxruntime's QuantType.
WEIGHT_TYPES = {"int8": "QInt8", "uint8": "QUInt8"}


@dataclasses.dataclass(frozen=True)
class QuantizationRecipe:
    """How one ONNX file is quantized (every field is an onnxruntime option).

    Attributes:
        method: `"dynamic"` (`quantize_dynamic`), `"static"`
            (`quantize_static`), `"blockwise"` (`MatMulNBitsQuantizer`, 8-bit
            blocks, int8 compute) or `"float16"`.
        op_types: operator types to quantize (None: onnxruntime's default).
        per_channel: one weight scale per output channel (else per tensor).
        reduce_range: 7-bit weights (for CPUs without VNNI, where 8-bit
            int8 ones saturate).
        weight_type: `"int8"` (onnxruntime's uint8 x int8 kernels) or
            `"uint8"` (uint8 x uint8: no saturation without VNNI, at a
            speed the CPU decides; see `recipe_for`).
        outlier_ratio: activation channels above `outlier_ratio` x the
            median channel's max stay float32 (None: off); a tuple of
            ratios is searched by `quantize_and_verify` (least bypass
            first, see the module).
        max_outlier_channels: at most this many per tensor.
        float_head: the task head (last dense layer) stays float32.
        calibration: static only: `"minmax"`, `"percentile"` or `"entropy"`.
        quant_format: static only: `"qdq"` or `"qoperator"`.
        preprocess: static only: run `quant_pre_process` first.
        block_size: blockwise only.
    """

    method: str
    op_types: tuple | None = ("MatMul",)
    per_channel: bool = True
    reduce_range: bool = False
    weight_type: str = "int8"
    outlier_ratio: float | None = 3.0
    max_outlier_channels: int = 32
    float_head: bool = True
    calibration: str = "percentile"
    quant_format: str = "qdq"
    preprocess: bool = True
    block_size: int = 32

    def __post_init__(self):
        if self.weight_type not in WEIGHT_TYPES:
            raise ValueError(
                f"weight_type must be one of {sorted(WEIGHT_TYPES)}; "
                f"got {self.weight_type!r}."
            )

    def describe(self):
        """The fields that apply to this method, for the export record."""
        fields = {"method": self.method}
        if self.method in ("dynamic", "static"):
            fields.update(
                op_types=list(self.op_types) if self.op_types else "onnxruntime default",
                per_channel=self.per_channel,
                reduce_range=self.reduce_range,
                weight_type=self.weight_type,
                outlier_ratio=(
                    list(self.outlier_ratio)
                    if isinstance(self.outlier_ratio, tuple)
                    else self.outlier_ratio
                ),
                max_outlier_channels=self.max_outlier_channels,
                float_head=self.float_head,
            )
        if self.method == "static":
            fields.update(
                calibration=self.calibration,
                quant_format=self.quant_format,
                preprocess=self.preprocess,
            )
        if self.method == "blockwise":
            fields.update(block_size=self.block_size, bits=8, accuracy_level=4)
        return fields

    @property
    def needs_calibration(self):
        return self.method == "static" or (
            self.method == "dynamic" and self.outlier_ratio is not None
        )

    def candidates(self):
        """One recipe per outlier ratio to try, in order (this one alone
        unless `outlier_ratio` is a tuple and the method uses it).

        Example:
        >>> [r.outlier_ratio for r in recipe_for("dynamic_int8").candidates()]
        [None, 8.0, 6.0, 4.0, 3.0]
        """
        if self.method not in ("dynamic", "static") or not isinstance(
            self.outlier_ratio, tuple
        ):
            return [self]
        return [dataclasses.replace(self, outlier_ratio=r) for r in self.outlier_ratio]


RECIPES = {
    "dynamic_int8": QuantizationRecipe("dynamic", outlier_ratio=OUTLIER_RATIOS),
    "int8": QuantizationRecipe("static"),
    "float16": QuantizationRecipe("float16"),
}


def recipe_for(quantization):
    """The `QuantizationRecipe` of a quantization name for this CPU (a recipe
    itself is taken as it is).

    The int8 names take 7-bit weights (`reduce_range`) where this CPU's int8
    products saturate (x86 without VNNI or AMX: see
    `kbert.utils.cpu.int8_products_saturate`); such a file is right on every
    CPU, an 8-bit one only where the products do not saturate, so export on
    (or `kbert verify` on) the CPU you deploy to.

    Example:
    >>> from kbert.utils.cpu import int8_products_saturate
    >>> recipe = recipe_for("dynamic_int8")
    >>> recipe.per_channel, recipe.reduce_range == int8_products_saturate()
    (True, True)
    """
    if isinstance(quantization, QuantizationRecipe):
        return quantization
    if quantization not in RECIPES:
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS}; got {quantization!r}."
        )
    recipe = RECIPES[quantization]
    if recipe.method in ("dynamic", "static") and int8_products_saturate():
        recipe = dataclasses.replace(recipe, reduce_range=True)
    return recipe


def calibration_source(feeds):
    """How the record names the calibration texts of `feeds`.

    Example:
    >>> calibration_source([{}] * 8)
    '8 real texts (Rotten Tomatoes training)'
    """
    return f"{len(feeds)} real texts (Rotten Tomatoes training)"


def calibration_feeds(model, spec, count=CALIBRATION_TEXTS, texts=None):
    """Real training reviews packed by the model's preprocessor, one text per
    feed at its own length (no padding in the statistics).

    Example:
    >>> feeds = calibration_feeds(classifier, spec, 8)
    >>> len(feeds), sorted(feeds[0]), feeds[0]["token_ids"].shape[0]
    (8, ['padding_mask', 'segment_ids', 'token_ids'], 1)
    """
    if model.preprocessor is None:
        raise ValueError(
            "Quantization calibrates on real text: the model needs a preprocessor."
        )
    texts = string_list(texts or representative_texts(count), "calibration texts")
    features = checked_features(
        model,
        token_features(model.preprocessor, spec, inputs_of(spec, texts)),
        "The calibration texts, tokenized by the model's preprocessor",
    )
    mask = np.asarray(features["padding_mask"])
    lengths = mask.reshape(len(mask), -1, mask.shape[-1]).sum(-1).max(-1)
    feeds = []
    for row, length in enumerate(lengths):
        feed = {}
        for name in spec.token_inputs:
            value = np.asarray(features[name][row : row + 1])
            feed[name] = value if name == "mask_positions" else value[..., : max(2, length)]
        if "mask_positions" in feed:
            feed["mask_positions"] = np.minimum(feed["mask_positions"], max(2, length) - 1)
        feeds.append(feed)
    return feeds


def length_batched(feeds, batch_size=agreement.BATCH_SIZE):
    """The one-text `feeds` of `calibration_feeds` in batches of `batch_size`
    texts of similar length, each padded to its longest (padding masked):
    for files whose rows do not depend on their batch (static int8 scales,
    float), the same outputs per text as one text per run, in a few runs.

    Example:
    >>> feeds = calibration_feeds(classifier, spec, 8)
    >>> batches = length_batched(feeds, batch_size=4)
    >>> [batch["token_ids"].shape[0] for batch in batches]
    [4, 4]
    >>> sum(int(f["padding_mask"].sum()) for f in feeds) == sum(
    ...     int(b["padding_mask"].sum()) for b in batches)
    True
    """
    order = sorted(range(len(feeds)), key=lambda row: feeds[row]["token_ids"].shape[-1])
    batches = []
    for start in range(0, len(order), batch_size):
        rows = [feeds[row] for row in order[start : start + batch_size]]
        longest = max(row["token_ids"].shape[-1] for row in rows)
        batch = {}
        for name in rows[0]:
            values = [row[name] for row in rows]
            if name != "mask_positions":
                values = [
                    np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, longest - v.shape[-1])])
                    for v in values
                ]
            batch[name] = np.concatenate(values)
        batches.append(batch)
    return batches


def quantize_onnx(float_path, path, recipe, feeds=None):
    """Writes the quantized model of the float32 file `float_path` to `path`.

    Args:
        float_path: a verified float32 ONNX file.
        path: where to write the quantized file.
        recipe: a quantization name or `QuantizationRecipe` with one
            outlier ratio (`dynamic_int8` searches several: see
            `quantize_and_verify`).
        feeds: calibration inputs (`calibration_feeds`), needed when
            `recipe.needs_calibration`.

    Returns:
        What was done: the recipe's fields plus the outlier channels kept
        float32 and the number of MatMuls quantized.

    Example:
    >>> recipe = QuantizationRecipe("dynamic", outlier_ratio=3.0)
    >>> summary = quantize_onnx(onnx_file, "classifier_int8.onnx", recipe,
    ...                         calibration_feeds(classifier, spec, 8))
    >>> summary["method"], summary["per_channel"], summary["float_matmuls"] >= 1
    ('dynamic', True, True)
    """
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    recipe = recipe_for(recipe)
    if len(recipe.candidates()) > 1:
        raise ValueError(
            f"quantize_onnx takes one outlier_ratio; got {recipe.outlier_ratio}: "
            "quantize_and_verify searches a tuple (or pass one of "
            "recipe.candidates())."
        )
    summary = recipe.describe()
    if recipe.needs_calibration and not feeds:
        raise ValueError(f"The {recipe.method} recipe calibrates on real text: pass feeds.")
    proto = onnx.load(os.fspath(float_path))
    if recipe.method == "float16":
        # lazy: onnxruntime's tools load only when a file is quantized
        from onnxruntime.transformers.float16 import convert_float_to_float16

        onnx.save(convert_float_to_float16(proto, keep_io_types=True), os.fspath(path))
        return summary
    if recipe.method == "blockwise":
        # lazy: onnxruntime's tools load only when a file is quantized
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        quantizer = MatMulNBitsQuantizer(
            proto, bits=8, block_size=recipe.block_size, accuracy_level=4, is_symmetric=True
        )
        quantizer.process()
        quantizer.model.save_model_to_file(os.fspath(path))
        return summary
    keep_float = head_matmuls(proto) if recipe.float_head else []
    outliers = {}
    if recipe.outlier_ratio is not None:
        split, outliers = split_outlier_channels(
            proto, feeds, recipe.outlier_ratio, recipe.max_outlier_channels, keep_float
        )
        keep_float = keep_float + split
    summary["outlier_channels"] = {
        "tensors": len(outliers),
        "channels": int(sum(outliers.values())),
    }
    summary["float_matmuls"] = len(keep_float)
    with work_directory("quantize") as work:
        source = os.path.join(work, "float.onnx")
        onnx.save(proto, source)
        if recipe.method == "dynamic":
            _dynamic(source, path, recipe, keep_float)
        elif recipe.method == "static":
            _static(source, path, recipe, keep_float, feeds, work)
        else:
            raise ValueError(f"Unknown quantization method {recipe.method!r}.")
    return summary


def _dynamic(source, path, recipe, keep_float):
    # lazy: onnxruntime's tools load only when a file is quantized
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        source,
        os.fspath(path),
        op_types_to_quantize=list(recipe.op_types) if recipe.op_types else None,
        per_channel=recipe.per_channel,
        reduce_range=recipe.reduce_range,
        weight_type=getattr(QuantType, WEIGHT_TYPES[recipe.weight_type]),
        nodes_to_exclude=list(keep_float),
    )


def _static(source, path, recipe, keep_float, feeds, work):
    # lazy: onnxruntime's tools load only when a file is quantized
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process  # lazy: same

    if recipe.preprocess:
        prepared = os.path.join(work, "prepared.onnx")
        # onnxruntime's symbolic shape inference fails on these graphs'
        # dynamic reshapes; ONNX's own shape inference and the graph
        # optimizations still run.
        quant_pre_process(source, prepared, skip_symbolic_shape=True)
        source = prepared

    class Feeds(CalibrationDataReader):
        def __init__(self, batches):
            self.batches = iter(batches)

        def get_next(self):
            return next(self.batches, None)

    methods = {
        "minmax": CalibrationMethod.MinMax,
        "percentile": CalibrationMethod.Percentile,
        "entropy": CalibrationMethod.Entropy,
    }
    formats = {"qdq": QuantFormat.QDQ, "qoperator": QuantFormat.QOperator}
    quantize_static(
        source,
        os.fspath(path),
        Feeds(_same_shape(feeds)),
        quant_format=formats[recipe.quant_format],
        op_types_to_quantize=list(recipe.op_types) if recipe.op_types else None,
        per_channel=recipe.per_channel,
        reduce_range=recipe.reduce_range,
        activation_type=QuantType.QUInt8,
        weight_type=getattr(QuantType, WEIGHT_TYPES[recipe.weight_type]),
        nodes_to_exclude=list(keep_float),
        calibrate_method=methods[recipe.calibration],
        extra_options={"CalibPercentile": 99.999},
    )


def _same_shape(feeds, batch_size=8):
    """Batches of feeds padded to one length: onnxruntime's histogram
    calibrators (percentile, entropy) need every batch in the same shape."""
    longest = max(f["token_ids"].shape[-1] for f in feeds)
    padded = []
    for feed in feeds:
        row = {}
        for name, value in feed.items():
            if name == "mask_positions":
                row[name] = value
            else:
                widths = [(0, 0)] * (value.ndim - 1) + [(0, longest - value.shape[-1])]
                row[name] = np.pad(value, widths)
        padded.append(row)
    batches = []
    for start in range(0, len(padded) - batch_size + 1, batch_size):
        rows = padded[start : start + batch_size]
        batches.append({k: np.concatenate([r[k] for r in rows]) for k in rows[0]})
    return batches or [{k: np.concatenate([r[k] for r in padded]) for k in padded[0]}]


def calibration_agreement(spec, float_outputs, runner, feeds):
    """Agreement (as `kbert.export.agreement` measures it) of the file that
    `runner` runs with the float32 file's `float_outputs` on the calibration
    `feeds`: training texts, not the held-out ones the export is checked on.

    Example:
    >>> from kbert.export.onnx.runner import OnnxRunner
    >>> feeds = calibration_feeds(classifier, spec, 8)
    >>> runner = OnnxRunner(onnx_file)
    >>> calibration_agreement(spec, [runner(f) for f in feeds], runner, feeds)
    1.0
    """
    scores = []
    for feed, want in zip(feeds, float_outputs):
        batch_scores, _ = agreement.prediction_scores(spec, runner(feed), want, feed)
        if batch_scores is None:  # nothing to compare (regression)
            return None
        scores.append(batch_scores)
    return float(np.mean(np.concatenate(scores)))


def held_out_agreement(model, spec, runner, bound, context, runtime, tried, last):
    """The held-out `agreement.verify_agreement` summary of a search's
    candidate, run by `runner` (token ids in); None when it misses `bound`
    and is not the `last` candidate, noted in its entry `tried[-1]`. The last
    candidate raises `ExportVerificationError`."""
    try:
        return agreement.verify_agreement(
            model,
            spec,
            lambda batch, _: (runner(batch), batch),
            bound,
            context,
            runtime=runtime,
        )
    except ExportVerificationError:
        if last:
            raise
        tried[-1]["held_out"] = "below min_agreement"
        return None


def quantize_and_verify(model, spec, path, quantization, min_agreement):
    """Quantizes the verified float32 file at `path` in place, checks its
    predictions against the Keras model on real text and returns what was
    done (the record's `quantized` entry); raises `ExportVerificationError`
    below `min_agreement`, leaving `path` as it was.

    A recipe with several outlier ratios (`dynamic_int8`) tries them in
    turn: a file that agrees with the float32 one on `SEARCH_TEXTS`
    training texts at `min_agreement` (None: `agreement.min_agreement_for`
    the model) is checked on the held-out texts and the first to pass is
    kept; the last ratio is always checked. The entry's `outlier_search`
    lists what each try measured.

    Example:
    >>> import shutil
    >>> _ = shutil.copy(onnx_file, "c.onnx")
    >>> summary = quantize_and_verify(classifier, spec, "c.onnx", "float16", 0.9)
    >>> summary["method"], summary["agreement"]["value"] >= 0.9
    ('float16', True)
    """
    import onnxruntime  # lazy: a heavy optional library, only for ONNX artifacts

    recipe = recipe_for(quantization)
    candidates = recipe.candidates()
    search = len(candidates) > 1
    feeds = search_feeds = None
    if recipe.needs_calibration:
        search_feeds = calibration_feeds(
            model, spec, SEARCH_TEXTS if search else CALIBRATION_TEXTS
        )
        feeds = search_feeds[:CALIBRATION_TEXTS]
    if search:
        float_runner = OnnxRunner(path)
        float_outputs = [float_runner(feed) for feed in search_feeds]
    bound = agreement.min_agreement_for(spec, min_agreement)
    quantized = f"{path}.quantized"
    tried = []
    try:
        for number, candidate in enumerate(candidates):
            summary = quantize_onnx(path, quantized, candidate, feeds)
            runner = OnnxRunner(quantized)
            last = number == len(candidates) - 1
            if search:
                value = calibration_agreement(spec, float_outputs, runner, search_feeds)
                tried.append(
                    {
                        "outlier_ratio": candidate.outlier_ratio,
                        "calibration_agreement": value,
                    }
                )
                if not last and value is not None and value < bound:
                    continue
            held_out = held_out_agreement(
                model,
                spec,
                runner,
                bound,
                f"ONNX quantization={quantization!r} on onnxruntime",
                f"onnxruntime {onnxruntime.__version__} (CPU)",
                tried,
                last,
            )
            if held_out is not None:
                summary["agreement"] = held_out
                break
        summary["cpu"] = cpu_name()  # the recipe's choice and its check were made here
        if feeds:
            summary["calibration"] = calibration_source(feeds)
        if tried:
            summary["outlier_search"] = tried
        os.replace(quantized, path)
    finally:
        if os.path.exists(quantized):
            os.remove(quantized)
    return summary
