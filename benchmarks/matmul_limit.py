"""The hardware's limit: a 2048 x 2048 matmul in float32 and bfloat16, per backend
(and int8 on onnxruntime).

Tells how far an encoder is from what this CPU can do, and which paths reach
its bf16 units (AVX512-BF16, AMX): torch eager, TensorFlow's oneDNN kernels
(without XLA) and XLA (TensorFlow `jit_compile=True`, JAX). onnxruntime's
`MatMulInteger` (uint8 x int8 -> int32, the kernel of kbert's `dynamic_int8`
ONNX files; VNNI where the CPU has it) gives an int8 limit, and its float32
`MatMul` one more float32 figure. `--threads N` pins each measurement to N
cores (and gives the libraries N threads), as `benchmarks/runtimes.py` does.

    python benchmarks/matmul_limit.py
    python benchmarks/matmul_limit.py --threads 2
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, run_worker  # noqa: E402
from end_to_end import cpu_description  # noqa: E402

SIZE = 2048
LIBRARIES = ("torch", "tensorflow", "jax", "onnxruntime")


def gflops(function, repeats=10):
    from kbert.export.measurements import median_seconds

    return 2 * SIZE**3 / median_seconds(function, repeats=repeats, warmup=2) / 1e9


def _onnxruntime_matmuls(threads):
    """`{name: callable}`: float32 MatMul and uint8 x int8 MatMulInteger."""
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    cases = {
        "onnxruntime MatMul float32": (
            "MatMul",
            TensorProto.FLOAT,
            TensorProto.FLOAT,
            TensorProto.FLOAT,
            rng.random((SIZE, SIZE), dtype="float32"),
            rng.random((SIZE, SIZE), dtype="float32"),
        ),
        "onnxruntime MatMulInteger int8": (
            "MatMulInteger",
            TensorProto.UINT8,
            TensorProto.INT8,
            TensorProto.INT32,
            rng.integers(0, 255, (SIZE, SIZE), dtype="uint8"),
            rng.integers(-127, 127, (SIZE, SIZE), dtype="int8"),
        ),
    }
    functions = {}
    for name, (op, a_type, b_type, out_type, a, b) in cases.items():
        graph = helper.make_graph(
            [helper.make_node(op, ["a", "b"], ["c"])],
            "matmul",
            [
                helper.make_tensor_value_info("a", a_type, [SIZE, SIZE]),
                helper.make_tensor_value_info("b", b_type, [SIZE, SIZE]),
            ],
            [helper.make_tensor_value_info("c", out_type, [SIZE, SIZE])],
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
        )
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            model.SerializeToString(),
            options,
            providers=["CPUExecutionProvider"],
        )
        functions[name] = lambda s=session, a=a, b=b: s.run(None, {"a": a, "b": b})
    return functions


def measure(library, threads=None):
    """`{name: GFLOP/s}` of the 2048 x 2048 matmuls on `library`."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.random((SIZE, SIZE), dtype="float32") for _ in range(2))
    results = {}
    if library == "torch":
        import torch

        if threads:
            torch.set_num_threads(threads)
        for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            x, y = torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)
            results[f"torch eager {name}"] = gflops(lambda x=x, y=y: torch.mm(x, y))
    elif library == "tensorflow":
        import tensorflow as tf

        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
        for name in ("float32", "bfloat16"):
            x, y = tf.cast(a, name), tf.cast(b, name)
            for label, jit in (("oneDNN (no XLA)", False), ("XLA", True)):
                f = tf.function(tf.matmul, jit_compile=jit)
                results[f"tensorflow {label} {name}"] = gflops(
                    lambda f=f, x=x, y=y: f(x, y).numpy()
                )
    elif library == "onnxruntime":
        for name, function in _onnxruntime_matmuls(threads).items():
            results[name] = gflops(function)
    else:
        import jax
        import jax.numpy as jnp

        for name in ("float32", "bfloat16"):
            x, y = jnp.asarray(a, name), jnp.asarray(b, name)
            f = jax.jit(jnp.matmul)
            results[f"jax XLA {name}"] = gflops(
                lambda f=f, x=x, y=y: f(x, y).block_until_ready()
            )
    return results


def worker(library, threads=None):
    print(json.dumps(measure(library, threads)))


def limits(threads=None, cpus=None):
    """`{name: GFLOP/s}` over every library, each in its own process (pinned
    to `cpus` when given)."""
    results = {}
    args = ["--threads", str(threads)] if threads else []
    for library in LIBRARIES:
        backend = library if library != "onnxruntime" else None
        try:
            results.update(
                run_worker(
                    __file__, ["--worker", library, *args], backend=backend, cpus=cpus
                )
            )
        except RuntimeError as error:  # a library not installed: its rows are missing
            print(f"matmul limit on {library}: {error}", file=sys.stderr)
    return results


def peaks(results):
    """The best float32, bfloat16 and int8 GFLOP/s among `limits()`' rows
    (`None` where none was measured), with the row each came from."""
    best = {}
    for kind, word in (("fp32", "float32"), ("bf16", "bfloat16"), ("int8", "int8")):
        rows = {name: value for name, value in results.items() if name.endswith(word)}
        if rows:
            name = max(rows, key=rows.get)
            best[kind] = {"gflops": rows[name], "from": name}
        else:
            best[kind] = None
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="pin to this many cores")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.threads)
    print(f"CPU: {cpu_description()}")
    cpus = sorted(os.sched_getaffinity(0))[: args.threads] if args.threads else None
    rows = [[name, f"{value:.0f}"] for name, value in limits(args.threads, cpus).items()]
    print_table([f"{SIZE}x{SIZE} matmul", "GFLOP/s (median of 10)"], rows)
    return None


if __name__ == "__main__":
    main()
