"""Keras AdamW whose PyTorch update runs in place, without temporary copies.

Fine-tuning a small BERT on a CPU spends a large share of each step in the
optimizer: all-MiniLM-L6-v2 has 22.7M parameters, half of them in the token
embedding, and Keras' torch AdamW allocates five temporary copies of every
moment and gradient per step (`g * g`, `m * alpha`, `sqrt(v)`, `+ eps`, the
quotient), and its global-norm clipping a squared copy of every gradient.
On a memory-bound CPU that makes the optimizer slower than the forward and
backward passes together. This class computes the same update (Keras'
formula, bit for bit up to float rounding) with `torch._foreach_*` in-place
ops: one temporary for `sqrt(v) + eps` and one for the clipped gradients.
On TensorFlow and JAX it is `keras.optimizers.AdamW` unchanged (XLA fuses
the update there).
"""

import keras

BACKEND = keras.backend.backend()
if BACKEND == "torch":
    import torch


@keras.saving.register_keras_serializable(package="kbert")
class InPlaceAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with an in-place update on the torch backend.

    Same arguments, variables and results as `keras.optimizers.AdamW`.

    Example:
    >>> optimizer = InPlaceAdamW(learning_rate=1e-3, global_clipnorm=1.0)
    >>> variable = keras.Variable(np.ones(3, "float32"))
    >>> gradient = keras.ops.convert_to_tensor(np.full(3, 2.0, "float32"))
    >>> optimizer.apply([gradient], [variable])
    >>> np.round(keras.ops.convert_to_numpy(variable), 4)
    array([0.999, 0.999, 0.999], dtype=float32)
    """

    def _clip_gradients(self, grads):
        if BACKEND != "torch" or not self.global_clipnorm or self.clipnorm:
            return super()._clip_gradients(grads)
        present = [g for g in grads if g is not None]
        with torch.no_grad():
            norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(present)))
            clip = float(self.global_clipnorm)
            # Keras' scale: 1 below the threshold, NaN when the norm is not finite.
            scale = clip * torch.minimum(1.0 / norm, torch.tensor(1.0 / clip)) + (
                norm - norm
            )
            scaled = iter(torch._foreach_mul(present, scale))
        return [None if g is None else next(scaled) for g in grads]

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if BACKEND != "torch":
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        with torch.no_grad():
            variables = [v.value for v in trainable_variables]
            index = [self._get_variable_index(v) for v in trainable_variables]
            momentums = [self._momentums[i].value for i in index]
            velocities = [self._velocities[i].value for i in index]
            # Keras' step size, computed as Keras computes it (in the variables' dtype).
            ops, dtype = keras.ops, variables[0].dtype
            step = ops.cast(self.iterations + 1, dtype)
            beta_1_power = ops.power(ops.cast(self.beta_1, dtype), step)
            beta_2_power = ops.power(ops.cast(self.beta_2, dtype), step)
            lr = ops.cast(learning_rate, dtype)
            alpha = float(lr * ops.sqrt(1 - beta_2_power) / (1 - beta_1_power))
            torch._foreach_mul_(momentums, self.beta_1)
            torch._foreach_add_(momentums, grads, alpha=1 - self.beta_1)
            torch._foreach_mul_(velocities, self.beta_2)
            torch._foreach_addcmul_(velocities, grads, grads, value=1 - self.beta_2)
            if self.amsgrad:
                hats = [self._velocity_hats[i].value for i in index]
                torch._foreach_maximum_(hats, velocities)
                velocities = hats
            denominators = torch._foreach_sqrt(velocities)
            torch._foreach_add_(denominators, self.epsilon)
            torch._foreach_addcdiv_(variables, momentums, denominators, value=-alpha)
        return None
