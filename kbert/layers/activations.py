"""Activation functions BERT checkpoints use, registered for serialization.

Both GELUs use the backend's fused kernel (`torch.nn.functional.gelu` is one
pass over the tensor where the erf formula is five), except the exact GELU on
TensorFlow: its fused `gelu` lowers to `Erfc`, which has no ONNX kernel, so
there it is written as `0.5 * x * (1 + erf(x / sqrt(2)))`.
"""

import math

import keras
from keras import ops

_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@keras.saving.register_keras_serializable(package="kbert")
def gelu(x):
    """Exact GELU, as in the original BERT and `hidden_act="gelu"` in HF."""
    if keras.backend.backend() == "tensorflow":
        return 0.5 * x * (1.0 + ops.erf(x * _INV_SQRT2))
    return ops.gelu(x, approximate=False)


@keras.saving.register_keras_serializable(package="kbert")
def gelu_approximate(x):
    """Tanh GELU, HF `gelu_new` / `gelu_pytorch_tanh`."""
    return ops.gelu(x, approximate=True)


_ALIASES = {
    "gelu": gelu,
    "gelu_exact": gelu,
    "gelu_approximate": gelu_approximate,
    "gelu_new": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "gelu_fast": gelu_approximate,
}


def get_activation(identifier):
    """Resolves an activation name (kbert, HF or Keras spelling) to a callable.

    Example:
    >>> get_activation("gelu_new") is gelu_approximate
    True
    """
    if callable(identifier):
        return identifier
    if identifier in _ALIASES:
        return _ALIASES[identifier]
    try:
        return keras.activations.get(identifier)
    except ValueError as error:
        raise ValueError(
            f"Unknown hidden_activation {identifier!r}. Use one of "
            f"{sorted(_ALIASES)} or a Keras activation name such as 'relu'."
        ) from error
