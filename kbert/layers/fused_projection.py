"""Dense layers as torch's own `linear`, for torch inference.

Eager torch pays Keras' Python dispatch once per op, and at batch 1 that
dispatch costs as much as the small matmuls themselves; Keras' Dense also
runs its matmul and its bias add as two ops, where torch's `linear` folds the
bias into the matmul (`addmm`). So in inference (torch, autograd off) a
transformer layer's Dense layers run as `torch.nn.functional.linear`, and
query, key and value, which read the same input, as one `linear` on their
kernels and biases concatenated: the same products, column for column.

The kernel is read as a transposed view (no copy): on an AMD Zen 4 (2 cores,
MiniLM's shapes, 32 x 128 tokens) that ran 1.02-1.10x as fast as `matmul` +
add in float32 and 0.99-1.02x in bfloat16, and a copy in torch's own (out,
in) layout no faster (`benchmarks/linear_layout.py`). The concatenation of
query, key and value is rebuilt whenever one of their weights is written:
torch counts every in-place write of a tensor (`assign`, optimizers, weight
loading) in its `_version`.

Everywhere else (TensorFlow, JAX, training, autocast dtype policies,
quantized or LoRA layers) `__call__` returns None and the layers run as
Keras runs them.

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


class FusedProjection:
    """Applies `denses` (built, same input) as one torch `linear` where that is
    exact; returns their outputs concatenated on the last axis, or None. A
    single Dense may have an activation, applied after."""

    def __init__(self, denses):
        self.denses = tuple(denses)
        # Fixed when a Dense is made, so read once: one Dense's activation
        # applies after; over a concatenation there is none to apply.
        activations = [_activation(dense) for dense in self.denses]
        self._fusable = len(self.denses) == 1 or not any(activations)
        self._activation = activations[0]
        self._variables = None  # kernels and biases, read once (a property each)
        self._cache = None  # (versions, kernel, bias)

    def __call__(self, x):
        if keras.backend.backend() != "torch":
            return None
        import torch  # lazy: the fused path is torch's

        if not self._fusable or torch.is_grad_enabled():
            return None
        if not all(_plain(dense) for dense in self.denses):
            return None
        if self._variables is None:
            self._variables = [
                w for dense in self.denses for w in (dense.kernel, dense.bias)
            ]
        weights = [variable.value for variable in self._variables]
        versions = tuple((id(w), w._version) for w in weights)
        if self._cache is None or self._cache[0] != versions:
            kernels, biases = weights[0::2], weights[1::2]
            kernel = kernels[0] if len(kernels) == 1 else torch.cat(kernels, dim=-1)
            bias = biases[0] if len(biases) == 1 else torch.cat(biases, dim=-1)
            self._cache = (versions, kernel, bias)
        if not isinstance(x, torch.Tensor):
            x = keras.ops.convert_to_tensor(x)
        outputs = torch.nn.functional.linear(x, self._cache[1].T, self._cache[2])
        return outputs if self._activation is None else self._activation(outputs)


def _activation(dense):
    """The Dense's activation, or None for the identity."""
    linear = dense.activation in (None, keras.activations.linear)
    return None if linear else dense.activation


def _plain(dense):
    """A float Dense whose variables are what it computes with: a bias, no
    quantization or LoRA, no autocast (mixed precision)."""
    return (
        dense.use_bias
        and dense.quantization_mode is None
        and not dense.lora_enabled
        and dense.compute_dtype == dense.variable_dtype
    )
