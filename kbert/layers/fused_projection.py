"""Several Dense layers on one input as one matmul, for torch inference.

Eager torch pays Keras' Python dispatch once per op, and at batch 1 that
dispatch costs as much as the small matmuls themselves. Query, key and value
read the same input, so in inference (torch, autograd off) their kernels and
biases are concatenated once and applied as one matmul and one add: the same
products, column for column. The concatenation is rebuilt whenever one of
the weights is written: torch counts every in-place write of a tensor
(`assign`, optimizers, weight loading) in its `_version`.

Everywhere else (TensorFlow, JAX, training, autocast dtype policies,
quantized or LoRA layers) `__call__` returns None and the layers run
separately.

Example:
>>> denses = [keras.layers.Dense(4) for _ in range(3)]
>>> for dense in denses:
...     dense.build((None, 4))
>>> projection = FusedProjection(denses)
>>> x = np.ones((2, 4), "float32")
>>> fused = projection(x)
>>> fused is None or tuple(fused.shape) == (2, 12)
True
"""

import keras
from keras import ops


class FusedProjection:
    """Applies `denses` (built, same input) as one matmul where that is exact;
    returns their outputs concatenated on the last axis, or None."""

    def __init__(self, denses):
        self.denses = tuple(denses)
        self._variables = None  # kernels and biases, read once (a property each)
        self._cache = None  # (versions, kernel, bias)

    def __call__(self, x):
        if keras.backend.backend() != "torch":
            return None
        import torch  # lazy: the fused path is torch's

        if torch.is_grad_enabled() or not all(_plain(dense) for dense in self.denses):
            return None
        if self._variables is None:
            self._variables = [
                w for dense in self.denses for w in (dense.kernel, dense.bias)
            ]
        weights = [variable.value for variable in self._variables]
        versions = tuple((id(w), w._version) for w in weights)
        if self._cache is None or self._cache[0] != versions:
            self._cache = (
                versions,
                torch.cat(weights[0::2], dim=-1),
                torch.cat(weights[1::2], dim=-1),
            )
        return ops.add(ops.matmul(x, self._cache[1]), self._cache[2])


def _plain(dense):
    """A float Dense whose variables are what it computes with: a bias, no
    activation, no quantization or LoRA, no autocast (mixed precision)."""
    return (
        dense.use_bias
        and dense.activation in (None, keras.activations.linear)
        and dense.quantization_mode is None
        and not dense.lora_enabled
        and dense.compute_dtype == dense.variable_dtype
    )
