"""Numeric checks of an artifact against the Keras model it came from."""

import numpy as np

# Default tolerances per export kind: max |artifact - Keras| per output, for
# outputs of magnitude <= 1 (probabilities); above, times max |Keras|, since
# float32 rounding grows with the values (e.g. oneDNN's fused GELU kernels
# in TensorFlow graphs round differently from eager ones).
SAVED_MODEL_TOLERANCE = 1e-5
FLOAT_TOLERANCE = 1e-4  # TFLite float32, MediaPipe, ONNX
# Quantized artifacts: max |artifact - Keras| relative to max |Keras|, per
# output. float16 and dynamic-range int8 stay well inside these on MiniLM;
# full int8 (int8 activations too) does not (about 1.6 x max |Keras| on
# MiniLM-L6), so such an export raises unless `tolerance=` accepts it.
QUANTIZED_RELATIVE_TOLERANCE = {"float16": 0.02, "dynamic_int8": 0.25, "int8": 0.5}


class ExportVerificationError(ValueError):
    """An artifact's outputs disagree with the Keras model's."""


def max_abs_diff(actual, expected, context=""):
    """`{output: max |actual - expected|}`; raises on missing or misshapen outputs.

    Example:
    >>> max_abs_diff({"logits": np.ones(2)}, {"logits": np.zeros(2)})
    {'logits': 1.0}
    """
    diffs = {}
    for name, want in expected.items():
        if name not in actual:
            raise ExportVerificationError(
                f"{context}: output {name!r} is missing; the artifact gives "
                f"{sorted(actual)}."
            )
        got = np.asarray(actual[name])
        want = np.asarray(want)
        if got.shape != want.shape:
            raise ExportVerificationError(
                f"{context}: output {name!r} has shape {got.shape}, the Keras "
                f"model's {want.shape}."
            )
        if not np.all(np.isfinite(got)):
            raise ExportVerificationError(f"{context}: output {name!r} is not finite.")
        if got.size == 0:
            diffs[name] = 0.0
            continue
        diffs[name] = float(np.max(np.abs(got.astype("float64") - want.astype("float64"))))
    return diffs


def check_close(actual, expected, tolerance, context, relative=False):
    """Raises `ExportVerificationError` unless every output is within tolerance.

    The bound is `tolerance * max(1, max |expected|)` per output; with
    `relative=True` (quantized artifacts) `tolerance * max |expected|`.
    Returns `max_abs_diff`'s dict.

    Example:
    >>> check_close({'p': np.array([0.5])}, {'p': np.array([0.5])}, 1e-5, 'test')
    {'p': 0.0}
    """
    diffs = max_abs_diff(actual, expected, context)
    for name, diff in diffs.items():
        bound = allowed_diff(expected[name], tolerance, relative)
        if not diff <= bound:
            kind = f"{tolerance:g} x max|Keras| = {bound:.3g}"
            raise ExportVerificationError(
                f"{context}: output {name!r} differs from the Keras model by "
                f"{diff:.3g} (allowed: {kind}). The artifact is not written."
            )
    return diffs


def allowed_diff(expected, tolerance, relative=False):
    """The largest max |artifact - Keras| `check_close` accepts for one output:
    `tolerance * max(1, max |expected|)`, or `tolerance * max |expected|` when
    `relative` (quantized artifacts).

    Example:
    >>> allowed_diff(np.array([0.2, -0.5]), 1e-4), allowed_diff(np.array([4.0]), 1e-4)
    (0.0001, 0.0004)
    >>> allowed_diff(np.array([4.0]), 0.25, relative=True)
    1.0
    """
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 0.0
    return tolerance * (max(scale, 1e-6) if relative else max(scale, 1.0))


def check_equal(actual, expected, context):
    """Integer outputs (token ids, positions) must match exactly.

    Example:
    >>> ids = np.array([[2, 7, 3]])
    >>> check_equal({"token_ids": ids}, {"token_ids": ids}, "SavedModel")
    >>> check_equal({"token_ids": ids + 1}, {"token_ids": ids}, "SavedModel")
    Traceback (most recent call last):
    ...
    kbert.export.checks.ExportVerificationError: SavedModel: output 'token_ids' differs ...
    """
    for name, want in expected.items():
        got = np.asarray(actual.get(name))
        if got.shape != np.asarray(want).shape or not np.array_equal(got, want):
            raise ExportVerificationError(
                f"{context}: output {name!r} differs from the preprocessor's."
            )


def merge_diffs(*diff_dicts):
    """Largest difference per output over several runs.

    Example:
    >>> merge_diffs({'logits': 1e-6}, {'logits': 3e-6})
    {'logits': 3e-06}
    """
    merged = {}
    for diffs in diff_dicts:
        for name, value in diffs.items():
            merged[name] = max(merged.get(name, 0.0), value)
    return merged
