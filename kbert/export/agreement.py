"""Prediction agreement of a quantized artifact with the Keras model, on real text.

A quantized artifact is never within float32's 1e-4 of the Keras model, and
its max |diff| says little about what users see. What they see is the
prediction: the class, the tagged label, the answer span. The exporters run
a quantized artifact on `AGREEMENT_TEXTS` held-out Rotten Tomatoes reviews
(`kbert.export.verification_data`, i.e. `kbert.data`, or the sentences
shipped in the package when that corpus cannot be fetched), in length-sorted batches
of 32 padded to each batch's longest text, and refuse it when the share of
predictions equal to the Keras model's falls below `min_agreement`.

What "agreement" means per task:

Each model class declares which (`agreement`, `kbert.models.preset_io`):

- classifier, multiple choice: same argmax class (multi-label: the same set
  of labels above 0.5); regression has no classes (None);
- token classifier: same argmax label on every real token;
- question answerer: same start and same end token;
- masked LM: same top-1 token at every masked position;
- text embedder, backbone: mean cosine similarity of the embeddings
  (pooled output for a backbone).
"""

import numpy as np

from kbert.export.checks import ExportVerificationError, max_abs_diff, merge_diffs
from kbert.export.formats import (
    AGREEMENT_TEXTS,
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_MIN_COSINE,
)
from kbert.export.spec import keras_outputs
from kbert.export.verification_data import (
    checked_features,
    source,
    token_features,
    verification_inputs,
)

BATCH_SIZE = 32


def prediction_agreement(spec, got, want, features):
    """`(agreement, kind)`: share of equal predictions (`kind="argmax"`),
    mean cosine similarity (`"cosine"`), or `(None, None)` for regression.

    Example:
    >>> want = {"logits": np.array([[0.0, 1.0], [2.0, 1.0]])}
    >>> got = {"logits": np.array([[0.0, 1.0], [0.5, 1.0]])}  # the second flipped
    >>> prediction_agreement(spec, got, want, token_inputs)
    (0.5, 'argmax')
    """
    scores, kind = prediction_scores(spec, got, want, features)
    return (None, None) if scores is None else (float(np.mean(scores)), kind)


def prediction_scores(spec, got, want, features):
    """`(per-prediction scores, kind)`: 1.0/0.0 per prediction, or cosines;
    `(None, None)` where the model declares nothing to compare (regression).
    What is compared is the model's `agreement` declaration (module docstring).

    Example:
    >>> want = {"logits": np.array([[0.0, 1.0], [2.0, 1.0]])}
    >>> prediction_scores(spec, want, want, token_inputs)
    (array([1., 1.]), 'argmax')
    """
    if spec.agreement is None:
        return None, None
    if spec.agreement == "cosine":  # of the one output without a sequence axis
        (name,) = (n for n in spec.output_names if n not in spec.sequence_outputs)
        a, b = np.asarray(got[name], "float64"), np.asarray(want[name], "float64")
        norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
        return np.sum(a * b, -1) / np.maximum(norms, 1e-12), "cosine"
    real = np.asarray(features["padding_mask"]) > 0
    if spec.agreement == "span":
        same = [
            _argmax(got[name], real) == _argmax(want[name], real)
            for name in spec.sequence_outputs
        ]
        return np.concatenate(same).astype("float64"), "argmax"
    # MediaPipe's classifier gives probabilities only: same argmax.
    name = "logits" if "logits" in got else "probabilities"
    logits_got, logits_want = np.asarray(got[name]), np.asarray(want[name])
    if spec.agreement == "label_set":
        threshold = 0.0 if name == "logits" else 0.5
        same = np.all((logits_got > threshold) == (logits_want > threshold), axis=-1)
        return same.astype("float64"), "argmax"
    same = np.argmax(logits_got, -1) == np.argmax(logits_want, -1)
    if spec.agreement == "argmax_per_token":
        same = same[real]
    return same.reshape(-1).astype("float64"), "argmax"


def _argmax(logits, real):
    return np.argmax(np.where(real, np.asarray(logits), -np.inf), axis=-1)


def length_batches(features, batch_size=BATCH_SIZE, cut=True):
    """`(rows, batch)` pairs: rows sorted by real length, each batch cut to
    its longest row (dynamic padding, as users of a runtime batch texts;
    `cut=False` keeps the full length, for files with a static one).

    Example:
    >>> [(len(rows), batch["token_ids"].shape) for rows, batch in
    ...  length_batches(token_inputs, batch_size=2)]  # real lengths 10, 7, 4
    [(2, (2, 7)), (1, (1, 10))]
    """
    mask = np.asarray(features["padding_mask"])
    lengths = np.sum(mask, axis=-1).reshape(len(mask), -1).max(axis=-1)
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        longest = max(2, int(lengths[rows].max()))
        batch = {}
        for name, value in features.items():
            value = np.asarray(value)[rows]
            keep = name == "mask_positions" or not cut
            batch[name] = value if keep else value[..., :longest]
        if "mask_positions" in batch:
            batch["mask_positions"] = np.minimum(batch["mask_positions"], longest - 1)
        yield rows, batch


def agreement_features(model, spec, count=None, preprocessor=None):
    """`(features, description)`: `count` (default `AGREEMENT_TEXTS`) held-out
    reviews packed by the model's preprocessor (or `preprocessor`), token
    inputs only.

    Example:
    >>> features, texts = agreement_features(classifier, spec, 40)
    >>> features["token_ids"].shape, texts
    ((40, 16), '40 real texts (Rotten Tomatoes test split)')
    """
    preprocessor = preprocessor or model.preprocessor
    if preprocessor is None:
        raise ValueError(
            "Agreement is measured on real text: the model needs a preprocessor."
        )
    texts = verification_inputs(spec, count or AGREEMENT_TEXTS)
    features = checked_features(
        model,
        token_features(preprocessor, spec, texts),
        "The agreement texts, tokenized by the preprocessor",
    )
    first = next(iter(texts.values()))
    distinct = len({str(text) for text in first})
    return features, f"{distinct} real texts ({source()})"


def measure_agreement(model, spec, run, features, batch_size=BATCH_SIZE, cut=True):
    """Runs the artifact and the Keras model on length-sorted batches of
    `features`; returns `(agreement, kind, max_abs_diff)`.

    `run(batch, rows)` runs the artifact on one batch (`rows`: their indices
    in `features`, e.g. to look up texts) and returns `(outputs, used)`:
    `used` is the token inputs the artifact's outputs correspond to (the
    batch, or the batch padded to a file's static length). Keras runs on
    `used`.

    Example:
    >>> from kbert.export.onnx.runner import OnnxRunner
    >>> runner = OnnxRunner(onnx_file)
    >>> features, _ = agreement_features(classifier, spec, 40)
    >>> value, kind, diffs = measure_agreement(
    ...     classifier, spec, lambda batch, rows: (runner(batch), batch), features)
    >>> value, kind, diffs["probabilities"] < 1e-4
    (1.0, 'argmax', True)
    """
    checked_features(model, features, "The agreement inputs")
    scores, kind, diffs = [], None, {}
    for rows, batch in length_batches(features, batch_size, cut):
        got, used = run(batch, rows)
        want = keras_outputs(model, used)
        want = {name: value for name, value in want.items() if name in got}
        diffs = merge_diffs(diffs, max_abs_diff(got, want, "The quantized artifact"))
        batch_scores, kind = prediction_scores(spec, got, want, used)
        if batch_scores is not None:
            scores.append(batch_scores)
    value = float(np.mean(np.concatenate(scores))) if scores else None
    return value, kind, diffs


def min_agreement_for(spec, min_agreement=None):
    """The bound an export checks agreement against: `min_agreement` when
    given, else kbert's default for what the model's agreement measures
    (`DEFAULT_MIN_AGREEMENT` of predictions; `DEFAULT_MIN_COSINE`, a mean
    cosine, for embeddings).

    Example:
    >>> min_agreement_for(spec), min_agreement_for(spec, 0.95)  # a classifier
    (0.99, 0.95)
    >>> from kbert.export.spec import export_spec
    >>> min_agreement_for(export_spec(kbert.BertTextEmbedder(backbone)))
    0.999
    """
    if min_agreement is not None:
        return min_agreement
    return DEFAULT_MIN_COSINE if spec.agreement == "cosine" else DEFAULT_MIN_AGREEMENT


def check_agreement(value, min_agreement, texts, context, kind="argmax"):
    """Raises `ExportVerificationError` when `value < min_agreement`.

    The message names the measured agreement (of predictions, or the mean
    cosine of embeddings: `kind="cosine"`), the texts and how to change the
    threshold (the exporters' `min_agreement=`, `--min-agreement` of
    `kbert export`).

    Example:
    >>> check_agreement(0.995, 0.99, "500 real texts", "ONNX dynamic_int8")
    >>> check_agreement(0.9, 0.99, "500 real texts", "ONNX int8")
    Traceback (most recent call last):
    ...
    kbert.export.checks.ExportVerificationError: ONNX int8: ... agree ... on 0.9000 of ...
    >>> check_agreement(0.9982, 0.999, "500 real texts", "int8", kind="cosine")
    Traceback (most recent call last):
    ...
    kbert.export.checks.ExportVerificationError: int8: ... cosine of 0.9982 ...=0.998 ...
    """
    if value is None or min_agreement is None:
        return
    if not value >= min_agreement:
        digits = 3 if kind == "cosine" else 2
        accept = max(0.0, np.floor(value * 10**digits) / 10**digits)
        measured = (
            f"its embeddings keep a mean cosine of {value:.4f} with the Keras "
            f"model's on {texts}"
            if kind == "cosine"
            else f"its predictions agree with the Keras model's on {value:.4f} of {texts}"
        )
        raise ExportVerificationError(
            f"{context}: {measured}, below the minimum agreement {min_agreement:g}. "
            f"The artifact is not written. To accept what was measured, pass "
            f"min_agreement={accept:.{digits}f} (kbert export: --min-agreement "
            f"{accept:.{digits}f}); or choose another quantization."
        )


def verify_agreement(model, spec, run, min_agreement, context, runtime=None, count=None):
    """Measures and checks the agreement of an artifact run by `run` (as in
    `measure_agreement`) on held-out reviews against `min_agreement` (None:
    `min_agreement_for` the model); returns the export record's `agreement`
    entry.

    Example:
    >>> from kbert.export.onnx.runner import OnnxRunner
    >>> runner = OnnxRunner(onnx_file)
    >>> def run(batch, rows):
    ...     return runner(batch), batch
    >>> entry = verify_agreement(classifier, spec, run, 0.99, "ONNX float32", count=40)
    >>> entry["value"], entry["min_agreement"]
    (1.0, 0.99)
    """
    min_agreement = min_agreement_for(spec, min_agreement)
    features, texts = agreement_features(model, spec, count)
    value, kind, diffs = measure_agreement(model, spec, run, features)
    check_agreement(value, min_agreement, texts, context, kind)
    entry = {"value": value, "kind": kind, "texts": texts, "min_agreement": min_agreement}
    if runtime:
        entry["runtime"] = runtime
    entry["max_abs_diff"] = diffs
    return entry
