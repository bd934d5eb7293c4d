"""A written SavedModel re-measured for `kbert verify`: run by TF Serving's
loader in a TensorFlow-only process, on strings when it has its
string signature; bounded as its exporter bounded it (1e-5)."""

import numpy as np

from kbert.export.checks import SAVED_MODEL_TOLERANCE
from kbert.export.measurements import PASSES, batches, first_row
from kbert.export.saved_model.runner import TEXT_SIGNATURE, TOKEN_SIGNATURE, run_saved_model


def measure(artifact, record, model, spec, texts, features, repeats, runtime):
    """Outputs and batch-1 latency of the SavedModel at `artifact` (see
    `kbert.export.formats.Exporter.measure`)."""
    if record.get("text_signature", True):
        signature = TEXT_SIGNATURE
        feeds = {k: np.array(v, object) for k, v in texts.items()}
    else:
        signature, feeds = TOKEN_SIGNATURE, features
    parts = batches(feeds, cut=signature == TOKEN_SIGNATURE)
    runs = [(signature, feeds), (signature, first_row(feeds))]
    runs += [(signature, part) for part in parts]
    outputs, seconds, _ = run_saved_model(
        artifact, runs, repeats=[0, repeats] + [PASSES] * len(parts)
    )
    return {
        "outputs": outputs[0],
        "features": features,
        "seconds": seconds[1],
        "batch_seconds": sum(seconds[2:]),  # each batch's median
        "runtime": "TensorFlow (TF Serving's loader, TensorFlow-only process)",
        "format": "saved_model",
        # Its exporter's bound (both signatures within it).
        "bound": {
            "tolerance": (record.get("verification") or {}).get(
                "tolerance", SAVED_MODEL_TOLERANCE
            ),
            "relative": False,
            "min_agreement": None,
        },
    }
