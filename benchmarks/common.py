"""Helpers shared by the benchmark scripts: timing and worker processes.

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
    """Median seconds per call of `fn()` (which must block until done)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


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
    from kbert.finetuning.report import format_table

    print(format_table(headers, rows))
