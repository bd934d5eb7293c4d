"""A written TFLite file re-measured for `kbert verify`: on `ai_edge_litert`
(strings in for the `"string"` flavour), a MediaPipe classifier on MediaPipe
Tasks' `TextClassifier`; a file that tokenizes on its own gets a note on how
its tokenizer reads accented and mobile-style text. Its bound is the one its
exporter verified it with."""

import numpy as np

from kbert.export.checks import describe, tokenizer_divergence
from kbert.export.measurements import batches, first_row
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
    """Outputs and timers of the TFLite file at `artifact` (see
    `kbert.export.formats.Exporter.measure`)."""
    run = _run(artifact, record, model, spec, texts, features)
    flavour = record.get("flavour")
    result = {
        **run,
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


def _run(path, record, model, spec, texts, features):
    """`outputs`, `features` (those the outputs answer), `runtime` and the
    timers `one` and `many`: all the examples in `batches`, each as the file
    takes it (one row at a time in a file of batch 1; MediaPipe's classifier
    takes a list of texts, and is closed by `close`)."""
    flavour = record.get("flavour", "token_ids")
    runner = mediapipe_runner(spec, flavour)
    if runner is not None:
        classifier = runner(path)
        try:
            got, _ = classifier(texts["text"])
        except BaseException:
            classifier.close()
            raise
        return {
            "outputs": got,
            "features": features,
            "runtime": "MediaPipe TextClassifier",
            "one": lambda: classifier([texts["text"][0]]),
            "many": lambda: classifier(texts["text"]),
            "close": classifier.close,
        }
    runner = TFLiteRunner(path)
    runtime = "ai_edge_litert" + (" + tf-text ops" if runner.custom_ops else "")
    if flavour == "string":
        preprocessor = tflite_preprocessor(
            model.preprocessor, record.get("sequence_length")
        )
        features, _ = texts_to_features(preprocessor, spec, texts)
        feeds = {k: np.array(v, object) for k, v in texts.items()}
        one, parts = first_row(feeds), batches(feeds)
        return {
            "outputs": run_rows(runner, feeds),
            "features": features,
            "runtime": runtime,
            "one": lambda: runner(one),
            "many": lambda: [run_rows(runner, part) for part in parts],
        }
    got, used = run_tokens(runner, spec, flavour, features)
    one = first_row(used)
    if flavour == "mediapipe":
        one = {name: one[source] for name, source in MEDIAPIPE_INPUTS.items()}
    parts = batches(features, cut=True)  # run_tokens pads to a static length
    return {
        "outputs": got,
        "features": used,
        "runtime": runtime,
        "one": lambda: runner(one),
        "many": lambda: [run_tokens(runner, spec, flavour, part) for part in parts],
    }
