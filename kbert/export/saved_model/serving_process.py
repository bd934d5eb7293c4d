"""Runs SavedModel signatures in a process that imports only TensorFlow.

Run as a script (never imported by it: it must not load Keras or kbert), it
plays TF Serving, which links TensorFlow's and tensorflow-text's kernels and
no Python: `import tensorflow` without Keras, tensorflow-text's op libraries
(`tf.load_op_library`, not `import tensorflow_text`, whose Keras layers need
Keras), `tf.saved_model.load`, call the signature. So a SavedModel that
needed Keras to load fails here. `import tensorflow` loads Keras (and
scikit-learn through it) only if it can; blocked, the imports take 2.4-2.5 s
instead of 4.0-4.1 s (AMD Zen 4, idle). The job file is JSON:

    {"directory": "...", "runs": [{"signature": "serving_default",
     "inputs": "in.npz", "outputs": "out.npz", "repeats": 0}]}

Each `outputs` file receives the signature's outputs, `__seconds__` (the
median time of `repeats` extra calls, when asked) and `__modules__` (the
top-level modules the process imported).

Example:
    python kbert/export/saved_model/serving_process.py job.json
"""

import glob
import importlib.util
import json
import os
import sys
import time

import numpy as np

# `None` in sys.modules makes an import fail; TensorFlow's own eager import of
# Keras is in a `try`, and its `tf.keras` is lazy.
NOT_IN_TF_SERVING = ("keras", "tf_keras", "sklearn")


def import_serving_tensorflow():
    """TensorFlow with tensorflow-text's ops registered, and no Keras."""
    for name in NOT_IN_TF_SERVING:
        sys.modules.setdefault(name, None)
    import tensorflow as tf  # lazy: TF only in the serving process

    package = os.path.dirname(importlib.util.find_spec("tensorflow_text").origin)
    for library in sorted(glob.glob(os.path.join(package, "python", "ops", "_*.so"))):
        tf.load_op_library(library)
    return tf


# What begins each answer line of --serve (serving_worker.py reads it).
DONE = "kbert-serving-done "


def main(job_path):
    run_job(import_serving_tensorflow(), job_path)


def serve(idle_seconds):
    tf = import_serving_tensorflow()
    kbert_package = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
    child_process = _load_by_path(os.path.join(kbert_package, "utils", "child_process.py"))
    child_process.serve_jobs(lambda job_path: run_job(tf, job_path), DONE, idle_seconds)


def _load_by_path(path):
    """A standard-library-only module of kbert, loaded from its file: importing
    it by name would import the package, and with it Keras."""
    name = "_kbert_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_job(tf, job_path):
    with open(job_path, encoding="utf-8") as file:
        job = json.load(file)
    loaded = tf.saved_model.load(job["directory"])
    for run in job["runs"]:
        function = loaded.signatures[run["signature"]]
        with np.load(run["inputs"]) as data:
            feeds = {name: tf.constant(data[name]) for name in data.files}
        outputs = {name: value.numpy() for name, value in function(**feeds).items()}
        times = []
        for _ in range(run.get("repeats", 0)):
            start = time.perf_counter()
            for value in function(**feeds).values():
                value.numpy()
            times.append(time.perf_counter() - start)
        modules = sorted(
            {name.split(".")[0] for name, module in sys.modules.items() if module}
        )
        np.savez(
            run["outputs"],
            __seconds__=np.array(np.median(times) if times else np.nan),
            __modules__=np.array(modules, dtype="S"),
            **outputs,
        )


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(float(sys.argv[2]))
    else:
        main(sys.argv[1])
