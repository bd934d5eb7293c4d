"""The hardware's limit: a 2048 x 2048 matmul in float32 and bfloat16, per backend.

Tells how far an encoder is from what this CPU can do, and which paths reach
its bf16 units (AVX512-BF16, AMX): torch eager, TensorFlow's oneDNN kernels
(without XLA) and XLA (TensorFlow `jit_compile=True`, JAX).

    python benchmarks/matmul_limit.py
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, run_worker  # noqa: E402
from end_to_end import cpu_description  # noqa: E402

SIZE = 2048


def gflops(function, repeats=10):
    from kbert.export.measurements import median_seconds

    return 2 * SIZE**3 / median_seconds(function, repeats=repeats, warmup=2) / 1e9


def worker(library):
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.random((SIZE, SIZE), dtype="float32") for _ in range(2))
    results = {}
    if library == "torch":
        import torch

        for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            x, y = torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)
            results[f"torch eager {name}"] = gflops(lambda x=x, y=y: torch.mm(x, y))
    elif library == "tensorflow":
        import tensorflow as tf

        for name in ("float32", "bfloat16"):
            x, y = tf.cast(a, name), tf.cast(b, name)
            for label, jit in (("oneDNN (no XLA)", False), ("XLA", True)):
                f = tf.function(tf.matmul, jit_compile=jit)
                results[f"tensorflow {label} {name}"] = gflops(
                    lambda f=f, x=x, y=y: f(x, y).numpy()
                )
    else:
        import jax
        import jax.numpy as jnp

        for name in ("float32", "bfloat16"):
            x, y = jnp.asarray(a, name), jnp.asarray(b, name)
            f = jax.jit(jnp.matmul)
            results[f"jax XLA {name}"] = gflops(
                lambda f=f, x=x, y=y: f(x, y).block_until_ready()
            )
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    print(f"CPU: {cpu_description()}")
    rows = []
    for library in ("torch", "tensorflow", "jax"):
        for name, value in run_worker(
            __file__, ["--worker", library], backend=library
        ).items():
            rows.append([name, f"{value:.0f}"])
    print_table([f"{SIZE}x{SIZE} matmul", "GFLOP/s (median of 10)"], rows)
    return None


if __name__ == "__main__":
    main()
