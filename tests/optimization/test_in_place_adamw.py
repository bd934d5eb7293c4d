"""InPlaceAdamW computes what `keras.optimizers.AdamW` computes."""

import keras
import numpy as np
import pytest

from kbert.optimization.in_place_adamw import InPlaceAdamW
from kbert.optimization.optimizers import bert_optimizer

SHAPES = {"kernel": (7, 5), "bias": (5,), "embeddings": (11, 5)}
STEPS = 6


def _gradients():
    rng = np.random.default_rng(0)
    _ = [rng.normal(size=shape) for shape in SHAPES.values()]  # the initial values
    return [
        [rng.normal(size=shape).astype("float32") for shape in SHAPES.values()]
        for _ in range(STEPS)
    ]


def _run(optimizer):
    rng = np.random.default_rng(0)
    variables = [
        keras.Variable(rng.normal(size=shape).astype("float32"), name=name)
        for name, shape in SHAPES.items()
    ]
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    for grads in _gradients():
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    return [keras.ops.convert_to_numpy(v) for v in variables]


def _reference(learning_rate, weight_decay, epsilon, beta_1=0.9, beta_2=0.999, **clipping):
    """AdamW as Keras documents it, in float64 NumPy: clip, decay (not the
    bias), then Adam with bias-corrected step size (and AMSGrad's maximum)."""
    rng = np.random.default_rng(0)
    variables = [
        rng.normal(size=shape).astype("float32").astype("float64")
        for shape in SHAPES.values()
    ]
    m = [np.zeros_like(v) for v in variables]
    v2 = [np.zeros_like(v) for v in variables]
    hat = [np.zeros_like(v) for v in variables]
    for step, grads in enumerate(_gradients(), start=1):
        grads = [g.astype("float64") for g in grads]
        if "global_clipnorm" in clipping:
            norm = np.sqrt(sum(np.sum(g * g) for g in grads))
            grads = [
                g * clipping["global_clipnorm"] / max(norm, clipping["global_clipnorm"])
                for g in grads
            ]
        if "clipnorm" in clipping:
            clip = clipping["clipnorm"]
            grads = [g * clip / max(np.sqrt(np.sum(g * g)), clip) for g in grads]
        alpha = learning_rate * np.sqrt(1 - beta_2**step) / (1 - beta_1**step)
        for i, (name, g) in enumerate(zip(SHAPES, grads)):
            if name != "bias":
                variables[i] = variables[i] - variables[i] * weight_decay * learning_rate
            m[i] += (g - m[i]) * (1 - beta_1)
            v2[i] += (g * g - v2[i]) * (1 - beta_2)
            hat[i] = np.maximum(hat[i], v2[i])
            second = hat[i] if clipping.get("amsgrad") else v2[i]
            variables[i] = variables[i] - alpha * m[i] / (np.sqrt(second) + epsilon)
    return variables


def _inherited_owner(name):
    """The class whose `name` `super()` reaches from `InPlaceAdamW`."""
    return next(c for c in InPlaceAdamW.__mro__[1:] if name in vars(c))


def _in_place_only(monkeypatch, arguments):
    """On PyTorch: Keras' update (and, for global_clipnorm alone, Keras'
    clipping) raise if `InPlaceAdamW` falls back to them; returns the count
    of in-place updates (`torch._foreach_addcdiv_` calls) made."""
    import torch

    def refuse(name):
        def fallback(*args, **kwargs):
            raise AssertionError(f"InPlaceAdamW fell back to Keras' {name}")

        monkeypatch.setattr(_inherited_owner(name), name, fallback)

    refuse("_backend_update_step")
    if arguments.get("global_clipnorm") and not arguments.get("clipnorm"):
        refuse("_clip_gradients")
    calls, addcdiv = [], torch._foreach_addcdiv_

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return addcdiv(*args, **kwargs)

    monkeypatch.setattr(torch, "_foreach_addcdiv_", counted)
    return calls


@pytest.mark.parametrize(
    "arguments",
    [
        {"global_clipnorm": 1.0},  # clipping active: the gradients' norm is ~8
        {"global_clipnorm": 100.0, "amsgrad": True},
        {"clipnorm": 0.5},
        {},
    ],
)
def test_same_variables_as_adamw_computed_in_numpy(arguments, monkeypatch):
    """On PyTorch the in-place update; on TensorFlow and JAX Keras' own AdamW
    (what those backends get): both against the formula, and each other."""
    common = dict(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, **arguments)
    clipping = {k: v for k, v in arguments.items()}
    want = _reference(0.01, 0.1, 1e-6, **clipping)
    keras_adamw = _run(keras.optimizers.AdamW(**common))
    if keras.backend.backend() == "torch":
        calls = _in_place_only(monkeypatch, arguments)
    got = _run(InPlaceAdamW(**common))
    if keras.backend.backend() == "torch":
        assert calls == [len(SHAPES)] * STEPS  # every step updated every variable in place
    for a, b, reference in zip(got, keras_adamw, want):
        np.testing.assert_allclose(
            b, reference, rtol=1e-5, atol=1e-6
        )  # the formula is Keras'
        np.testing.assert_allclose(a, reference, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    initial = _reference(0.0, 0.0, 1e-6)
    assert all(np.abs(a - i).max() > 1e-3 for a, i in zip(got, initial))  # it moved


def test_bert_optimizer_is_in_place_and_round_trips():
    optimizer = bert_optimizer(total_steps=10, warmup_steps=2)
    assert isinstance(optimizer, InPlaceAdamW)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is InPlaceAdamW
    assert restored.global_clipnorm == optimizer.global_clipnorm
