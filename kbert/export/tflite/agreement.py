"""Prediction agreement of a quantized TFLite file with the Keras model.

The file runs on `ai_edge_litert` on `agreement.AGREEMENT_TEXTS` held-out
reviews (one row at a time when its batch is 1, at its static sequence
length when it has one); Keras runs on the same token ids. `"string"` files
take the texts themselves and Keras the ids of tf-text's tokenizer, which
the file holds.
"""

import numpy as np

from kbert.export import agreement
from kbert.export.tflite.inputs import run_rows, run_tokens, tflite_preprocessor
from kbert.export.tflite.runner import TFLiteRunner
from kbert.export.verification_data import (
    checked_features,
    source,
    token_features,
    verification_inputs,
)
from kbert.preprocessing.preprocessor import BertPreprocessor

# Why full int8 fails on BERT, for its error message (measured on MiniLM-L6
# fine-tuned on Rotten Tomatoes: 0.77 agreement on 1,281 held-out reviews).
INT8_REASON = (
    "full int8 gives activations fixed per-tensor ranges from the calibration "
    "texts, and BERT's LayerNorm and GELU outputs have outlier channels many "
    "times larger than the rest, which take most of the 256 levels; "
    'quantization="dynamic_int8" quantizes activations at run time and keeps '
    "the predictions"
)


def tflite_agreement(model, spec, path, options, min_agreement, count=None):
    """Measures and checks agreement; returns the record's `agreement` entry.

    Example:
    >>> options = {"flavour": "token_ids", "quantization": None, "sequence_length": None}
    >>> entry = tflite_agreement(classifier, spec, tflite_file, options, 0.99, count=40)
    >>> entry["value"], entry["kind"]
    (1.0, 'argmax')
    """
    flavour, quantization = options["flavour"], options["quantization"]
    runner = TFLiteRunner(path)
    first = "ids" if flavour == "mediapipe" else next(iter(runner.input_details))
    static_length = runner.input_shape(first)[-1] if flavour != "string" else -1
    preprocessor = model.preprocessor
    if flavour == "string":
        preprocessor = tflite_preprocessor(model.preprocessor, options["sequence_length"])
    elif static_length > 0 and static_length != preprocessor.sequence_length:
        preprocessor = BertPreprocessor(
            preprocessor.tokenizer,
            sequence_length=static_length,
            truncation=preprocessor.truncation,
        )
    if flavour == "string":
        texts = verification_inputs(spec, count or agreement.AGREEMENT_TEXTS)
        features = token_features(preprocessor, spec, texts)
        checked_features(model, features, "The agreement texts, tokenized in the artifact")
        described = f"{len(set(next(iter(texts.values()))))} real texts ({source()})"

        def run(batch, rows):
            feeds = {k: np.array([v[i] for i in rows], object) for k, v in texts.items()}
            got = run_rows(runner, feeds)
            return {k: v for k, v in got.items() if k in spec.output_names}, batch

    else:
        features, described = agreement.agreement_features(
            model, spec, count, preprocessor=preprocessor
        )

        def run(batch, rows):
            return run_tokens(runner, spec, flavour, batch)

    value, kind, diffs = agreement.measure_agreement(
        model, spec, run, features, cut=flavour != "string" and static_length <= 0
    )
    context = f"TFLite ({flavour}, quantization={quantization!r}) on ai_edge_litert"
    if quantization == "int8":
        context += f" ({INT8_REASON})"
    min_agreement = agreement.min_agreement_for(spec, min_agreement)
    agreement.check_agreement(value, min_agreement, described, context, kind)
    return {
        "value": value,
        "kind": kind,
        "texts": described,
        "min_agreement": min_agreement,
        "max_abs_diff": diffs,
    }
