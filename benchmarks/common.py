"""Helpers shared by the benchmark scripts: timing, compiled forward passes
and worker processes.

Each measured configuration runs in its own process, because the Keras
backend is fixed at import time; the driver collects one JSON line per run.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np


def time_call(fn, repeats, warmup=1):
    """Median seconds per call of `fn()` (which must block until done).

    `kbert.export.runtimes.median_seconds` does the same, but importing kbert
    would load Keras (and TensorFlow) into the reference library's worker.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def keras_forward(model):
    """The compiled inference function of a Keras model on this backend:
    XLA on TensorFlow, `jax.jit` on JAX, eager under `no_grad` on torch."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        fn = tf.function(lambda x: model(x, training=False), jit_compile=True)
        return lambda x: keras.tree.map_structure(lambda t: t.numpy(), fn(x))
    if backend == "jax":
        import jax

        fn = jax.jit(lambda tv, ntv, x: model.stateless_call(tv, ntv, x, training=False)[0])
        tv = [v.value for v in model.trainable_variables]
        ntv = [v.value for v in model.non_trainable_variables]
        return lambda x: jax.block_until_ready(fn(tv, ntv, x))
    import torch

    def run(x):
        with torch.no_grad():
            return model({k: torch.from_numpy(v) for k, v in x.items()}, training=False)

    return run


def run_worker(script, args, backend=None):
    """Runs `python script args` in a fresh process; returns its JSON result."""
    env = dict(os.environ)
    if backend:
        env["KERAS_BACKEND"] = backend
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    result = subprocess.run(
        [sys.executable, script, *args], env=env, capture_output=True, text=True
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        sys.stderr.write(result.stderr[-3000:])
        raise RuntimeError(f"worker {args} on {backend} failed ({result.returncode})")
    return json.loads(lines[-1])


def print_table(headers, rows):
    from kbert.utils.tables import markdown_table

    print(markdown_table(headers, rows))
