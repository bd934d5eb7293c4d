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

    `kbert.export.measurements.median_seconds` does the same, but importing kbert
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


def worker_environment(backend=None, cpus=None):
    """The environment of a worker process: `KERAS_BACKEND`, quiet TensorFlow
    and, when the worker is pinned to `cpus`, that many OpenMP threads."""
    env = dict(os.environ)
    if backend:
        env["KERAS_BACKEND"] = backend
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if cpus:
        env["OMP_NUM_THREADS"] = str(len(cpus))
    return env


def pinned(cpus):
    """A `preexec_fn` pinning the child process to `cpus` (None: no pinning)."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def run_worker(script, args, backend=None, cpus=None):
    """Runs `python script args` in a fresh process (pinned to the cores
    `cpus` when given); returns its JSON result."""
    result = subprocess.run(
        [sys.executable, script, *args],
        env=worker_environment(backend, cpus),
        capture_output=True,
        text=True,
        preexec_fn=pinned(cpus),
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        sys.stderr.write(result.stderr[-3000:])
        raise RuntimeError(f"worker {args} on {backend} failed ({result.returncode})")
    return json.loads(lines[-1])


def print_table(headers, rows):
    from kbert.utils.tables import markdown_table

    print(markdown_table(headers, rows))


def finetune_demo_classifier(preset, train_examples=4000):
    """Fine-tunes all-MiniLM-L6-v2 on Rotten Tomatoes as `examples/demo.py`
    does (its recipe, one epoch) and saves a kbert preset; returns facts."""
    import numpy as np

    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.sentiment_demo import (
        DEMO_RECIPE,
        LABELS,
        accuracy,
        sentiment_splits,
    )

    splits = sentiment_splits(train_examples, seed=DEMO_RECIPE.seed)
    model = build_classifier(
        DEMO_RECIPE, num_classes=2, num_examples=train_examples, id2label=LABELS
    )
    _, _, seconds = train_classifier(model, DEMO_RECIPE, splits["train"], verbose=0)
    texts, labels = splits["test"]
    logits = model.predict(texts, batch_size=32, verbose=0)
    model.save_to_preset(preset)
    return {
        "preset": preset,
        "train_examples": train_examples,
        "train_seconds": round(seconds, 1),
        "test_accuracy": round(accuracy(logits, np.asarray(labels)), 4),
    }


def linear_probe_classifier(preset, train_examples=512):
    """all-MiniLM-L6-v2 with a two-class head fitted by logistic regression on
    the standardized pooled output of `train_examples` training reviews (no
    fine-tuning: a weak head with many near-tied reviews); saves a preset."""
    import keras
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.models.classifier import BertClassifier

    model = BertClassifier.from_preset(
        "all_minilm_l6_v2",
        num_classes=2,
        sequence_length=48,
        id2label={0: "rotten", 1: "fresh"},
    )
    splits = rotten_tomatoes_split(seed=0)
    texts, labels = splits["train"]
    pooled = np.concatenate(
        [
            keras.ops.convert_to_numpy(
                model.backbone(model.preprocessor(texts[i : i + 64]))["pooled_output"]
            )
            for i in range(0, train_examples, 64)
        ]
    )
    y = np.asarray(labels[:train_examples], "float64")
    mean, std = pooled.mean(0), pooled.std(0) + 1e-6
    z = (pooled - mean) / std
    weights, bias = np.zeros(z.shape[1]), 0.0
    for _ in range(300):  # gradient descent, L2 0.01
        p = 1 / (1 + np.exp(-(z @ weights + bias)))
        weights -= 0.5 * (z.T @ (p - y) / len(z) + 0.01 * weights)
        bias -= 0.5 * float(np.mean(p - y))
    kernel = np.zeros((z.shape[1], 2), "float32")
    kernel[:, 1] = weights / std
    model.classifier.kernel.assign(kernel)
    model.classifier.bias.assign(np.array([0.0, bias - weights @ (mean / std)], "float32"))
    model.save_to_preset(preset)
    test_texts, test_labels = splits["test"]
    predicted = np.argmax(model.predict(test_texts, batch_size=32, verbose=0), -1)
    return {"preset": preset, "test_accuracy": float(np.mean(predicted == test_labels))}
