"""Whether a lower precision runs slower than float32 on this backend and CPU.

A bfloat16 model is meant to be faster. On a CPU without bf16 units
(AVX512-BF16, AMX), PyTorch computes bf16 matmuls in a reference kernel:
on an AMD Zen 3, a 256x256 matmul took 132 times as long as in float32, and
a MiniLM classifier's `predict` several times as long. XLA's CPU backend
(JAX) has no fast bf16 matmul on any CPU measured: JAX bf16 `predict` of
the demo classifier ran 0.96x (AMD Zen 4), 0.88x (Xeon with AMX) and 0.83x
(Xeon without) of JAX float32 (`benchmarks/runtimes.py`), its 256x256
matmul 1.3-1.5x as long (Zen 4). Rather than guess from CPU flags, kbert
times one small matmul per backend and dtype, once per process (a few
milliseconds in float32), and warns when the lower precision takes more
than `SLOWDOWN_BOUND` times as long.
"""

import time
import warnings

import keras
import numpy as np

# 10% slower: on an AMD Zen 4 (AVX512-BF16) the bf16 matmul took 0.7x
# (TensorFlow) and 0.9x (PyTorch) as long as float32, on JAX 1.3-1.5x.
SLOWDOWN_BOUND = 1.1
_MATMUL_SIZE = 256
_SLOWDOWNS = {}


class SlowPrecisionWarning(UserWarning):
    """A model was built in a precision that runs slower than float32 here."""


def _on_accelerator():
    backend = keras.backend.backend()
    if backend == "torch":
        import torch  # lazy: the backend in use, loaded already

        return torch.cuda.is_available()
    if backend == "jax":
        import jax  # lazy: the backend in use, loaded already

        return jax.default_backend() != "cpu"
    if backend == "tensorflow":
        import tensorflow as tf  # lazy: the backend in use, loaded already

        return bool(tf.config.list_physical_devices("GPU"))
    return False


def _matmul_seconds(dtype, repeats=10, budget_seconds=0.1):
    """The fastest of up to `repeats` timings (fewer once `budget_seconds`
    are spent): the minimum, since other processes only ever add time."""
    values = np.random.default_rng(0).random((_MATMUL_SIZE, _MATMUL_SIZE), "float32")
    matrix = keras.ops.convert_to_tensor(values, dtype=dtype)
    keras.ops.convert_to_numpy(keras.ops.matmul(matrix, matrix))  # warm-up
    timings = []
    while len(timings) < repeats and sum(timings) < budget_seconds:
        start = time.perf_counter()
        keras.ops.convert_to_numpy(keras.ops.matmul(matrix, matrix))
        timings.append(time.perf_counter() - start)
    return min(timings)


def precision_slowdown(compute_dtype):
    """How many times slower a matmul runs in `compute_dtype` than in float32
    on this backend's CPU: measured once per process; `1.0` for float32 and on
    GPUs/TPUs.

    Example:
    >>> precision_slowdown("float32")
    1.0
    >>> precision_slowdown("bfloat16") > 0
    True
    """
    compute_dtype = keras.backend.standardize_dtype(compute_dtype)
    if compute_dtype == "float32" or not compute_dtype.startswith(("float", "bfloat")):
        return 1.0
    key = (keras.backend.backend(), compute_dtype)
    if key not in _SLOWDOWNS:
        if _on_accelerator():
            _SLOWDOWNS[key] = 1.0
        else:
            _SLOWDOWNS[key] = _matmul_seconds(compute_dtype) / _matmul_seconds("float32")
    return _SLOWDOWNS[key]


def warn_if_slower_than_float32(dtype_policy, stacklevel=3):
    """Warns (`SlowPrecisionWarning`) when `dtype_policy` computes in a
    precision more than `SLOWDOWN_BOUND` times slower than float32 here."""
    compute_dtype = getattr(dtype_policy, "compute_dtype", None) or "float32"
    slowdown = precision_slowdown(compute_dtype)
    if slowdown > SLOWDOWN_BOUND:
        factor = f"{slowdown:.0f}" if slowdown >= 10 else f"{slowdown:.1f}"
        warnings.warn(
            f"{compute_dtype} runs {factor}x slower than float32 on this CPU "
            f"with the {keras.backend.backend()} backend (measured on a "
            f"{_MATMUL_SIZE}x{_MATMUL_SIZE} matmul: the backend has no fast "
            f"{compute_dtype} kernel for this CPU, which lacks AVX512-BF16/AMX or "
            'the backend does not use them). Build the model in float32 (dtype="float32") '
            "for speed here, or use another backend.",
            SlowPrecisionWarning,
            stacklevel=stacklevel,
        )
