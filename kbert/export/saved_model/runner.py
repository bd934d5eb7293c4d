"""Runs a SavedModel as TF Serving does: in a Python process with only
TensorFlow and tensorflow-text's ops, no Keras (`serving_process.py`, kept
by `serving_worker.py` across SavedModels), or here.

Takes and returns dicts of NumPy arrays keyed by input and output name.
"""

import json
import os

import numpy as np

from kbert.export.saved_model.serving_worker import ServingProcessError, run_serving_job
from kbert.utils.owned_temps import work_directory
from kbert.utils.strings import utf8_bytes

# The SavedModel's signatures: strings in, and token ids in.
TEXT_SIGNATURE = "serving_default"
TOKEN_SIGNATURE = "serve_token_ids"


def run_saved_model(directory, runs, repeats=0):
    """Runs signatures in a TensorFlow-only process (each call loads the
    SavedModel anew there).

    Args:
        directory: the SavedModel.
        runs: list of `(signature_name, {input_name: array})`.
        repeats: extra timed calls per run (an int, or one per run).

    Returns:
        `(outputs, seconds, modules)`: one output dict per run, the median
        seconds per call of each run (NaN without repeats) and the top-level
        modules the process had imported.

    Example:
    >>> runs = [("serving_default", {"text": np.array(["A fine film."])})]
    >>> outputs, _, modules = run_saved_model(saved_model_dir, runs)
    >>> outputs[0]["probabilities"].shape, "kbert" in modules, "keras" in modules
    ((1, 2), False, False)
    """
    if isinstance(repeats, int):
        repeats = [repeats] * len(runs)
    with work_directory("serving") as tmp:
        job = {"directory": os.path.abspath(directory), "runs": []}
        for i, (signature, feeds) in enumerate(runs):
            inputs = os.path.join(tmp, f"in{i}.npz")
            np.savez(inputs, **{name: utf8_bytes(value) for name, value in feeds.items()})
            job["runs"].append(
                {
                    "signature": signature,
                    "inputs": inputs,
                    "outputs": os.path.join(tmp, f"out{i}.npz"),
                    "repeats": repeats[i],
                }
            )
        job_path = os.path.join(tmp, "job.json")
        with open(job_path, "w", encoding="utf-8") as file:
            json.dump(job, file)
        try:
            run_serving_job(job_path)
        except ServingProcessError as error:
            raise RuntimeError(
                f"Loading {directory} in a TensorFlow-only process failed:\n{error}"
            ) from None
        outputs, seconds, modules = [], [], []
        for run in job["runs"]:
            with np.load(run["outputs"]) as data:
                outputs.append({k: data[k] for k in data.files if not k.startswith("__")})
                seconds.append(float(data["__seconds__"]))
                modules = [m.decode() for m in data["__modules__"]]
        return outputs, seconds, modules


def run_saved_model_here(directory, runs):
    """`run_saved_model` in this process (`tf.saved_model.load`), no timing.

    Example:
    >>> runs = [("serve_token_ids", token_inputs)]
    >>> run_saved_model_here(saved_model_dir, runs)[0]["logits"].shape
    (3, 2)
    """
    # lazy: a runtime loads only when an artifact is run
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tf-text ops

    loaded = tf.saved_model.load(os.fspath(directory))
    outputs = []
    for signature, feeds in runs:
        tensors = {name: tf.constant(utf8_bytes(value)) for name, value in feeds.items()}
        result = loaded.signatures[signature](**tensors)
        outputs.append({name: value.numpy() for name, value in result.items()})
    return outputs


class SavedModelRunner:
    """One signature of a SavedModel (default: token ids in), run as TF Serving
    runs it: each call loads it anew in the TensorFlow-only process.
    """

    def __init__(self, directory, signature=TOKEN_SIGNATURE):
        self.directory = os.fspath(directory)
        self.signature = signature

    def __call__(self, feeds):
        outputs, _, _ = run_saved_model(self.directory, [(self.signature, feeds)])
        return outputs[0]
