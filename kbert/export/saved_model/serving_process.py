"""Runs SavedModel signatures in a process that imports only TensorFlow.

Run as a script (never imported by it: it must not load Keras or kbert), it
plays TF Serving: `import tensorflow`, `import tensorflow_text` (the ops TF
Serving links in), `tf.saved_model.load`, call the signature. The job file
is JSON:

    {"directory": "...", "runs": [{"signature": "serving_default",
     "inputs": "in.npz", "outputs": "out.npz", "repeats": 0}]}

Each `outputs` file receives the signature's outputs, `__seconds__` (the
median time of `repeats` extra calls, when asked) and `__modules__` (the
top-level modules the process imported).

Example:
    python kbert/export/saved_model/serving_process.py job.json
"""

import json
import sys
import time

import numpy as np


def main(job_path):
    # lazy: TF only in the serving process
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tf-text ops

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
        modules = sorted({name.split(".")[0] for name in sys.modules})
        np.savez(
            run["outputs"],
            __seconds__=np.array(np.median(times) if times else np.nan),
            __modules__=np.array(modules, dtype="S"),
            **outputs,
        )


if __name__ == "__main__":
    main(sys.argv[1])
