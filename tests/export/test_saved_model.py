"""SavedModel for TF Serving: signatures, a TensorFlow-only process, variables once."""

import importlib
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kbert.export
from kbert.export.saved_model.exporter import SERVING_TF_TEXT_OPS, graph_ops
from kbert.export.verification_data import verification_texts
from tests.export.export_helpers import features, keras_outputs, tiny_model

# What TF Serving does with the artifact: load it with TensorFlow (and the
# tensorflow-text ops it links), call a signature. No kbert, no Keras objects.
SERVING = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text
directory, texts = sys.argv[1], json.loads(sys.argv[2])
loaded = tf.saved_model.load(directory)
text = loaded.signatures["serving_default"](text=tf.constant(texts))
packed = {k: tf.constant(v) for k, v in json.loads(sys.argv[3]).items()}
ids = loaded.signatures["serve_token_ids"](**packed)
print(json.dumps({
    "text": {k: v.numpy().tolist() for k, v in text.items()},
    "ids": {k: v.numpy().tolist() for k, v in ids.items()},
    "kbert_imported": "kbert" in sys.modules,
}))
"""


def _meta_graph(directory):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(directory, "saved_model.pb"), "rb") as file:
        proto.ParseFromString(file.read())
    return proto.meta_graphs[0]


def _variables_bytes(directory):
    folder = os.path.join(directory, "variables")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the same export from JAX/torch goes through the subprocess bridge, "
    "tested by test_saved_model_from_another_backend",
)
def test_saved_model_serves_in_a_tensorflow_only_process(tmp_path):
    model = tiny_model(num_classes=2, hidden_dim=32, id2label={0: "rotten", 1: "fresh"})
    path = str(tmp_path / "classifier" / "1")
    record = kbert.export.saved_model(model, path)

    texts = verification_texts(4, offset=20)
    packed = {k: v[:, :12] for k, v in features(model, texts).items()}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            SERVING,
            path,
            json.dumps(texts),
            json.dumps({k: v.tolist() for k, v in packed.items()}),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    assert served["kbert_imported"] is False
    want_text = keras_outputs(model, features(model, texts))
    want_ids = keras_outputs(model, packed)
    for name in ("logits", "probabilities"):
        np.testing.assert_allclose(served["text"][name], want_text[name], atol=1e-5, rtol=0)
        np.testing.assert_allclose(served["ids"][name], want_ids[name], atol=1e-5, rtol=0)

    meta_graph = _meta_graph(path)
    for name in ("serving_default", "serve_token_ids"):
        assert meta_graph.signature_def[name].method_name == "tensorflow/serving/predict"
    assert sorted(meta_graph.signature_def["serving_default"].inputs) == ["text"]
    # Variables stored once: the checkpoint is about the size of the weights.
    weight_bytes = sum(int(np.prod(v.shape)) * 4 for v in model.weights)
    assert weight_bytes < _variables_bytes(path) < 1.3 * weight_bytes
    tf_text_ops = {
        "FastWordpieceTokenizeWithOffsets",
        "RegexSplitWithOffsets",
        "NormalizeUTF8",
    }
    assert tf_text_ops <= graph_ops(path)
    assert set(record["tf_text_ops"]) <= SERVING_TF_TEXT_OPS
    assert record["verification"]["max_abs_diff"]["serving_default"]["logits"] <= 1e-5
    assert "without Keras or kbert" in record["verification"]["runtime"]


def test_a_serving_process_that_loaded_keras_is_refused(monkeypatch):
    """TF Serving runs no Python: the verifier's process must not have needed
    Keras (or kbert) to load the SavedModel."""
    from kbert.export.saved_model import exporter
    from kbert.export.spec import export_spec

    model = tiny_model(num_classes=2)
    spec = export_spec(model, None)

    def loaded_keras(directory, runs):
        outputs = [keras_outputs(model, features) for _, features in runs[:1]]
        return outputs, [float("nan")], ["keras", "numpy", "tensorflow"]

    monkeypatch.setattr(exporter, "run_saved_model", loaded_keras)
    with pytest.raises(RuntimeError, match=r"imported \['keras'\]; TF Serving has neither"):
        exporter.verify_saved_model(model, spec, "unused")


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the bridge is the same for JAX and torch; JAX runs it in test_tflite",
)
def test_saved_model_from_another_backend(tmp_path):
    """Exported by a TensorFlow subprocess; must equal this backend's model."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    model = tiny_model("BertQuestionAnswerer")
    path = str(tmp_path / "qa")
    record = kbert.export.saved_model(model, path)
    assert record["backend"].startswith("tensorflow (exported from")
    assert (
        record["cross_backend"]["max_abs_diff"]["serving_default"]["start_logits"] <= 1e-5
    )

    questions, contexts = verification_texts(3, offset=3), verification_texts(3, offset=9)
    loaded = tf.saved_model.load(path)
    served = loaded.signatures["serving_default"](
        question=tf.constant(questions), context=tf.constant(contexts)
    )
    inputs = {
        k: np.asarray(v)
        for k, v in model.preprocessor.preprocess((questions, contexts)).items()
    }
    want = keras_outputs(model, inputs)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(served[name].numpy(), want[name], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(served["token_ids"].numpy(), inputs["token_ids"])


def test_saved_model_failure_leaves_previous_artifact(tmp_path, monkeypatch):
    """A failed export (here: a graph using an op TF Serving 2.14 lacks)
    leaves the deployed directory as it was and no temporary directory."""
    module = importlib.import_module(
        "kbert.export.saved_model.exporter"
    )  # not the function

    if keras.backend.backend() != "tensorflow":
        pytest.skip("on JAX/torch the write happens in the TensorFlow subprocess")
    path = tmp_path / "model"
    path.mkdir()
    (path / "previous.txt").write_text("the artifact already deployed")
    real_ops = module.graph_ops
    monkeypatch.setattr(
        module, "graph_ops", lambda d: real_ops(d) | {"TFText>RoundRobinTrim"}
    )
    with pytest.raises(ValueError, match="RoundRobinTrim"):
        kbert.export.saved_model(tiny_model(num_classes=2), str(path), overwrite=True)
    assert os.listdir(path) == ["previous.txt"]
    assert sorted(os.listdir(tmp_path)) == ["model"]
