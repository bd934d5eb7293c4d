"""A written TFLite file re-measured for `kbert verify`: on `ai_edge_litert`
(strings in for the `"string"` flavour), a MediaPipe classifier on MediaPipe
Tasks' `TextClassifier`; a file that tokenizes on its own gets a note on how
its tokenizer reads accented and mobile-style text. Its bound is the one its
exporter verified it with."""

import numpy as np

from kbert.export.checks import describe, tokenizer_divergence
from kbert.export.measurements import batches, first_row, median_seconds, pass_seconds
from kbert.export.tflite.inputs import (
    MEDIAPIPE_INPUTS,
    deployment_preprocessor,
    run_rows,
    run_tokens,
    tflite_preprocessor,
)
from kbert.export.tflite.runner import TFLiteRunner, mediapipe_runner
from kbert.export.tflite.verification import tolerance
from kbert.export.verification_data import texts_to_features


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and batch-1 latency of the TFLite file at `artifact` (see
    `kbert.export.formats.Exporter.measure`)."""
    got, used, seconds, batch_seconds, name = _run(
        artifact, record, model, spec, texts, features, repeats
    )
    flavour = record.get("flavour")
    result = {
        "outputs": got,
        "features": used,
        "seconds": seconds,
        "batch_seconds": batch_seconds,
        "runtime": name,
        "format": f"tflite {flavour} {record.get('quantization') or 'float32'}",
        "bound": _bound(record),
    }
    if flavour in ("string", "mediapipe"):
        deployment, tokenizer = deployment_preprocessor(
            model.preprocessor, flavour, record.get("sequence_length")
        )
        divergence = tokenizer_divergence(
            model.preprocessor.tokenizer, deployment.tokenizer, tokenizer
        )
        result["tokenizer"] = describe(divergence)
    return result


def _bound(record):
    """The bound the exporter verified the file with: its recorded tolerance
    (relative to max |Keras| when quantized) and, quantized, its agreement.

    Example:
    >>> _bound({"quantization": "dynamic_int8", "verification": {
    ...     "tolerance": 0.25, "agreement": {"min_agreement": 0.99}}})
    {'tolerance': 0.25, 'relative': True, 'min_agreement': 0.99}
    """
    verification = record.get("verification") or {}
    quantization = record.get("quantization")
    bound, relative = tolerance(quantization, verification.get("tolerance"))
    agreement = verification.get("agreement") or {}
    minimum = agreement.get("min_agreement") if quantization else None
    return {"tolerance": bound, "relative": relative, "min_agreement": minimum}


def _run(path, record, model, spec, texts, features, repeats):
    """`(outputs, features used, batch-1 seconds, seconds for all, runtime)`:
    all the examples in `batches`, each as the file takes it (one row at a
    time in a file of batch 1; MediaPipe's classifier takes a list of texts)."""
    flavour = record.get("flavour", "token_ids")
    runner = mediapipe_runner(spec, flavour)
    if runner is not None:
        classifier = runner(path)
        try:
            got, _ = classifier(texts["text"])
            seconds = median_seconds(
                lambda: classifier([texts["text"][0]]), repeats=repeats
            )
            batch_seconds = pass_seconds(lambda: classifier(texts["text"]))
        finally:
            classifier.close()
        return got, features, seconds, batch_seconds, "MediaPipe TextClassifier"
    runner = TFLiteRunner(path)
    runtime = "ai_edge_litert" + (" + tf-text ops" if runner.custom_ops else "")
    if flavour == "string":
        preprocessor = tflite_preprocessor(
            model.preprocessor, record.get("sequence_length")
        )
        features, _ = texts_to_features(preprocessor, spec, texts)
        feeds = {k: np.array(v, object) for k, v in texts.items()}
        got = run_rows(runner, feeds)
        seconds = median_seconds(lambda: runner(first_row(feeds)), repeats=repeats)
        parts = batches(feeds)
        batch_seconds = pass_seconds(lambda: [run_rows(runner, p) for p in parts])
        return got, features, seconds, batch_seconds, runtime
    got, used = run_tokens(runner, spec, flavour, features)
    one = first_row(used)
    if flavour == "mediapipe":
        one = {name: one[source] for name, source in MEDIAPIPE_INPUTS.items()}
    seconds = median_seconds(lambda: runner(one), repeats=repeats)
    parts = batches(features, cut=True)  # run_tokens pads to a static length
    batch_seconds = pass_seconds(
        lambda: [run_tokens(runner, spec, flavour, part) for part in parts]
    )
    return got, used, seconds, batch_seconds, runtime
