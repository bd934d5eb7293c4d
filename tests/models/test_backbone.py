import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kbert
from tests.test_case import (
    TINY_BACKBONE,
    assert_all_close,
    run_model_test,
    to_numpy,
    token_inputs,
)


def test_backbone_harness(tmp_path):
    data = token_inputs()
    run_model_test(
        kbert.BertBackbone,
        lambda: dict(TINY_BACKBONE),
        data,
        {"sequence_output": (3, 10, 16), "pooled_output": (3, 16)},
        tmp_path=tmp_path,
        run_fit=False,
    )


def test_hidden_states_are_embeddings_plus_one_per_layer():
    backbone = kbert.BertBackbone(**TINY_BACKBONE, output_hidden_states=True)
    outputs = backbone(token_inputs())
    assert len(outputs["hidden_states"]) == TINY_BACKBONE["num_layers"] + 1
    assert_all_close(outputs["hidden_states"][-1], outputs["sequence_output"])


def test_every_constructor_argument_is_serialized():
    arguments = dict(
        vocabulary_size=70,
        num_layers=3,
        num_heads=4,
        hidden_dim=24,
        intermediate_dim=40,
        hidden_activation="relu",
        dropout=0.2,
        attention_dropout=0.3,
        max_sequence_length=33,
        num_segments=5,
        layer_norm_epsilon=1e-7,
        initializer_range=0.05,
        output_hidden_states=True,
    )
    config = kbert.BertBackbone(**arguments).get_config()
    assert {k: config[k] for k in arguments} == arguments
    revived = kbert.BertBackbone.from_config(config)
    assert revived.embeddings.segment_embedding.embeddings.shape == (5, 24)
    assert revived.embeddings.position_embedding.embeddings.shape == (33, 24)
    assert revived.transformer_layers[2].intermediate.kernel.shape == (24, 40)
    assert revived.transformer_layers[0].output_layer_norm.epsilon == 1e-7


def test_padding_does_not_change_real_token_outputs():
    backbone = kbert.BertBackbone(**TINY_BACKBONE)
    data = token_inputs(batch=1, length=6)
    data["padding_mask"][:] = 1
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in data.items()}
    short = to_numpy(backbone(data))["sequence_output"]
    long = to_numpy(backbone(padded))["sequence_output"][:, :6]
    np.testing.assert_allclose(long, short, atol=1e-5)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_all_padding_rows_stay_finite(policy):
    backbone = kbert.BertBackbone(**TINY_BACKBONE, dtype=policy)
    data = token_inputs()
    data["padding_mask"][1] = 0
    for value in keras.tree.flatten(to_numpy(backbone(data))):
        assert np.isfinite(value.astype("float32")).all()


def test_explicit_attention_path_matches_fused_kernel():
    backbone = kbert.BertBackbone(**TINY_BACKBONE, attention_dropout=0.0)
    layer = backbone.transformer_layers[0]
    x = keras.random.normal((2, 7, 16), seed=1)
    mask = np.ones((2, 1, 1, 7), bool)
    mask[1, ..., 4:] = False
    fused = layer(x, attention_mask=mask)
    explicit, probabilities = layer(x, attention_mask=mask, return_attention_scores=True)
    assert_all_close(explicit, fused, atol=1e-5)
    probabilities = to_numpy(probabilities)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    assert np.all(probabilities[1, ..., 4:] == 0)


def test_defaults_for_segment_ids_and_padding_mask():
    backbone = kbert.BertBackbone(**TINY_BACKBONE)
    data = token_inputs()
    full = {
        **data,
        "segment_ids": 0 * data["segment_ids"],
        "padding_mask": 1 + 0 * data["padding_mask"],
    }
    assert_all_close(backbone({"token_ids": data["token_ids"]}), backbone(full))


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"token_id": np.ones((1, 4), "int32")}, "keys"),
        ({"token_ids": np.ones((1, 4), "float32")}, "'token_ids' must be integers"),
        ({"token_ids": np.ones((1, 30), "int32")}, "max_sequence_length=24"),
        (
            {
                "token_ids": np.ones((2, 4), "int32"),
                "padding_mask": np.ones((2, 5), "int32"),
            },
            r"'padding_mask' must have shape \(batch, sequence_length\) = \(2, 4\)",
        ),
        ([np.ones((1, 4), "int32")], "takes a dict"),
    ],
)
def test_bad_input_raises_value_error_naming_it(inputs, message):
    backbone = kbert.BertBackbone(**TINY_BACKBONE)
    with pytest.raises(ValueError, match=message):
        backbone(inputs)


def test_unknown_activation_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown hidden_activation 'swishy'"):
        kbert.BertBackbone(**TINY_BACKBONE, hidden_activation="swishy")


def test_gelu_variants_match_reference_formulas():
    x = np.linspace(-6, 6, 101).astype("float32")
    import math

    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(
        to_numpy(kbert.gelu(keras.ops.convert_to_tensor(x))), exact, atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(kbert.gelu_approximate(keras.ops.convert_to_tensor(x))), tanh, atol=1e-6
    )


BACKENDS = ("tensorflow", "jax", "torch")

_LOAD_ON_BACKEND = """
import json, sys
import numpy as np, kbert
backbone = kbert.BertBackbone.from_preset(sys.argv[1])
data = {k: np.array(v, "int32") for k, v in json.load(open(sys.argv[2])).items()}
out = backbone.predict(data, verbose=0)
np.save(sys.argv[3], np.concatenate([out["sequence_output"].reshape(-1), out["pooled_output"].reshape(-1)]))
"""


def test_weights_saved_on_this_backend_load_on_every_other(tmp_path):
    backbone = kbert.BertBackbone(**TINY_BACKBONE)
    data = token_inputs()
    out = to_numpy(backbone.predict(data, verbose=0))
    expected = np.concatenate(
        [out["sequence_output"].reshape(-1), out["pooled_output"].reshape(-1)]
    )
    backbone.save_to_preset(tmp_path / "preset")
    (tmp_path / "data.json").write_text(
        json.dumps({k: v.tolist() for k, v in data.items()})
    )
    for backend in BACKENDS:
        if backend == keras.backend.backend():
            continue
        result = tmp_path / f"{backend}.npy"
        subprocess.run(
            [
                sys.executable,
                "-c",
                _LOAD_ON_BACKEND,
                str(tmp_path / "preset"),
                str(tmp_path / "data.json"),
                str(result),
            ],
            env={**os.environ, "KERAS_BACKEND": backend},
            check=True,
            capture_output=True,
        )
        np.testing.assert_allclose(
            np.load(result), expected, atol=1e-5, rtol=0, err_msg=backend
        )


_IMPORT_CHECK = """
import sys
import numpy as np, kbert
backbone = kbert.BertBackbone(vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=4, intermediate_dim=8)
backbone.predict({"token_ids": np.ones((1, 3), "int32")}, verbose=0)
classifier = kbert.BertClassifier(backbone, num_classes=2)
classifier.predict({"token_ids": np.ones((1, 3), "int32"), "segment_ids": np.zeros((1, 3), "int32"), "padding_mask": np.ones((1, 3), "int32")}, verbose=0)
print("tensorflow" in sys.modules)
"""


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_token_id_models_do_not_import_tensorflow(backend):
    if keras.backend.backend() != backend:
        pytest.skip("checked once, in the run of this backend")
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_CHECK],
        env={**os.environ, "KERAS_BACKEND": backend},
        check=True,
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_dtype_policy_is_kept_in_config(policy):
    backbone = kbert.BertBackbone(**TINY_BACKBONE, dtype=policy)
    assert backbone.dtype_policy.name == policy
    revived = kbert.BertBackbone.from_config(backbone.get_config())
    assert revived.dtype_policy.name == policy
    assert revived.transformer_layers[0].query.compute_dtype == policy.split("_")[1]


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch inference path")
def test_torch_inference_skips_keras_call_bookkeeping_with_equal_outputs():
    import torch

    backbone = kbert.BertBackbone(**TINY_BACKBONE, output_hidden_states=True)
    inputs = token_inputs()
    keras_path = keras.Model.__call__(backbone, backbone.standardize_inputs(inputs))
    calls = []
    backbone.call = lambda *args, _call=backbone.call, **kwargs: (
        calls.append(kwargs) or _call(*args, **kwargs)
    )
    with torch.no_grad():
        direct = backbone(inputs)
    assert calls == [{"training": False}]
    for name in ("sequence_output", "pooled_output"):
        assert_all_close(direct[name], keras_path[name], atol=1e-6)
    assert len(direct["hidden_states"]) == TINY_BACKBONE["num_layers"] + 1
    # With autograd on (training, gradients), Keras' __call__ runs as before.
    outputs = backbone(inputs, training=True)
    outputs["pooled_output"].sum().backward()
    assert backbone.embeddings.token_embedding.embeddings.value.grad is not None
