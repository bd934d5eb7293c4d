"""The agreement bound a quantized artifact is held to, per what it predicts:
0.99 of the predictions (classes, labels, spans, tokens), a mean cosine of
0.999 for embeddings, unless the caller names another."""

import numpy as np
import pytest

from kbert.export import agreement
from kbert.export.checks import ExportVerificationError
from kbert.export.spec import export_spec, keras_outputs
from tests.export.export_helpers import tiny_model

pytestmark = pytest.mark.backend_independent  # NumPy over a tiny model's outputs


def _tilted(model, cosine):
    """Runs the Keras model and turns each embedding away from it to `cosine`."""
    rng = np.random.default_rng(0)

    def run(batch, rows):
        want = keras_outputs(model, batch)["embeddings"].astype("float64")
        noise = rng.standard_normal(want.shape)
        noise -= (
            np.sum(noise * want, -1, keepdims=True)
            * want
            / np.sum(want * want, -1, keepdims=True)
        )  # orthogonal to each embedding
        noise *= np.linalg.norm(want, axis=-1, keepdims=True) / np.linalg.norm(
            noise, axis=-1, keepdims=True
        )
        tan = np.sqrt(1 - cosine**2) / cosine
        return {"embeddings": want + tan * noise}, batch

    return run


def test_an_embedder_is_held_to_a_mean_cosine_of_0_999():
    embedder = tiny_model("BertTextEmbedder")
    spec = export_spec(embedder)
    assert spec.agreement == "cosine"
    exact = agreement.verify_agreement(
        embedder, spec, _tilted(embedder, 0.9995), None, "tilted", count=40
    )
    assert exact["kind"] == "cosine" and exact["min_agreement"] == 0.999
    assert exact["value"] == pytest.approx(0.9995, abs=1e-6)
    with pytest.raises(
        ExportVerificationError,
        match=r"mean cosine of 0\.9955 .* minimum agreement 0\.999\. .*min_agreement=0\.995 ",
    ):
        agreement.verify_agreement(
            embedder, spec, _tilted(embedder, 0.9955), None, "tilted", count=40
        )
    named = agreement.verify_agreement(
        embedder, spec, _tilted(embedder, 0.9955), 0.99, "tilted", count=40
    )
    assert named["min_agreement"] == 0.99
    assert named["value"] == pytest.approx(0.9955, abs=1e-6)


def test_a_classifier_keeps_0_99_of_its_predictions():
    classifier = tiny_model(num_classes=3)
    spec = export_spec(classifier)
    assert agreement.min_agreement_for(spec) == 0.99
    flips = []

    def run(batch, rows):  # the first of 40 predictions moved to another class
        got = keras_outputs(classifier, batch)
        logits = np.array(got["logits"])
        for row, index in enumerate(rows):
            if index == 0:
                logits[row] = np.roll(logits[row], 1)
                flips.append(index)
        return {**got, "logits": logits}, batch

    with pytest.raises(
        ExportVerificationError, match=r"0\.9750 .* minimum agreement 0\.99\b"
    ):
        agreement.verify_agreement(classifier, spec, run, None, "one flip", count=40)
    assert flips == [0]
