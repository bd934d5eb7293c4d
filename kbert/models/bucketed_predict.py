"""Running a task's compiled inference over length-bucketed batches.

`Task.predict` on raw samples (and `predict_features`) hands its batches here
(`length_batching.predict_batches`: rows sorted by length, each batch padded
to its bucket): one compiled function per backend and `jit_compile` choice
(`inference_function`) runs them, and `run_batches` puts the outputs back in
input order, padded again to the preprocessor's `sequence_length` with zeros
at every padding position.
"""

import functools

import keras
import numpy as np

from kbert.models import length_batching
from kbert.models.backbone import fastest_jit_compile


def run_batches(task, batches, count, steps, verbose, callbacks, model=None):
    """Runs `(row_index, features)` batches; outputs in input order.

    `row_index` None means the batches are already in order (a dataset).
    """
    verbose = 1 if verbose == "auto" else verbose
    callbacks = keras.callbacks.CallbackList(
        callbacks,
        add_progbar=verbose != 0,
        verbose=verbose,
        epochs=1,
        steps=steps,
        model=task,
    )
    done = task.__dict__.get("_kbert_rows_predicted", 0)
    forward = inference_function(task, model or task, done + (count or 0))
    axis = task.output_sequence_axis
    full = task._sequence_length

    def restore(value, rows, mask):
        """Drop padding rows; zero padding tokens and pad them back to `full`."""
        value = value[:rows]
        if axis is None:
            return value
        mask = np.expand_dims(mask, tuple(range(1, axis)))
        mask = np.expand_dims(mask, tuple(range(axis + 1, value.ndim)))
        value = np.where(mask.astype(bool), value, np.zeros((), value.dtype))
        return length_batching.pad_to_length(value, axis, full)

    pieces = []
    callbacks.on_predict_begin()
    for step, (index, features) in enumerate(batches):
        callbacks.on_predict_batch_begin(step)
        rows = len(index) if index is not None else None
        mask = np.asarray(features["padding_mask"])[:rows]
        restore_rows = functools.partial(restore, rows=rows, mask=mask)
        outputs = keras.tree.map_structure(restore_rows, forward(features))
        pieces.append((index, outputs))
        done += len(mask)
        callbacks.on_predict_batch_end(step, {"outputs": outputs})
    callbacks.on_predict_end()
    task.__dict__["_kbert_rows_predicted"] = done  # untracked, as the functions
    if not pieces:
        return empty_outputs(task)
    if count is None:
        return keras.tree.map_structure(
            lambda *values: np.concatenate(values), *[p[1] for p in pieces]
        )

    def scatter(*values):
        result = np.empty((count,) + values[0].shape[1:], values[0].dtype)
        for (index, _), value in zip(pieces, values):
            result[index] = value
        return result

    return keras.tree.map_structure(scatter, *[p[1] for p in pieces])


def empty_outputs(task):
    """Outputs of no samples: zero rows, the shapes `predict` gives otherwise."""
    full = task._sequence_length

    def empty(tensor):
        shape = tuple(full if d is None else d for d in tensor.shape[1:])
        return np.zeros((0,) + shape, keras.backend.standardize_dtype(tensor.dtype))

    return keras.tree.map_structure(empty, task.output)


def compiles_per_shape():
    """Whether `inference_function` traces a program per input shape: on
    TensorFlow and JAX; torch runs eagerly, so any batch shape costs nothing
    extra there."""
    return keras.backend.backend() != "torch"


def inference_function(task, model, rows=None):
    """`features -> NumPy outputs` of `model` (this task, or a model over
    its layers), compiled as `compile()` chose (by default XLA on JAX, and
    on TensorFlow for float32 once this task will have predicted `rows`
    rows: `fastest_jit_compile`; eager on torch), one program per shape;
    eagerly, like `fit` and `evaluate`, where the task was compiled with
    `run_eagerly=True`."""
    backend = keras.backend.backend()
    if (
        getattr(task, "run_eagerly", False) and backend != "torch"
    ):  # torch: eager below, no autograd
        return lambda x: keras.tree.map_structure(
            keras.ops.convert_to_numpy, model(x, training=False)
        )
    jit_compile = getattr(task, "_inference_jit_compile", "auto")
    if jit_compile == "auto":
        policy = task.backbone.dtype_policy
        jit_compile = fastest_jit_compile(policy, training=False, rows=rows)
    if backend == "tensorflow":
        import tensorflow as tf  # lazy: only on the TensorFlow backend

        cache = model.__dict__.setdefault("_kbert_inference", {})
        if jit_compile not in cache:
            cache[jit_compile] = tf.function(
                lambda x: model(x, training=False),
                jit_compile=jit_compile,
                reduce_retracing=True,
            )
        function = cache[jit_compile]
        return lambda x: keras.tree.map_structure(lambda t: t.numpy(), function(x))
    if backend == "jax":
        import jax  # lazy: the JAX backend only

        def call(trainable, non_trainable, x):
            return model.stateless_call(trainable, non_trainable, x, training=False)[0]

        cache = model.__dict__.setdefault("_kbert_inference", {})
        if jit_compile not in cache:
            cache[jit_compile] = jax.jit(call) if jit_compile else call
        function = cache[jit_compile]
        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]
        return lambda x: keras.tree.map_structure(
            np.asarray, function(trainable, non_trainable, x)
        )
    import torch  # lazy: the torch backend only

    def run(x):
        x = {name: torch.from_numpy(np.asarray(value)) for name, value in x.items()}
        with torch.no_grad():
            outputs = model(x, training=False)
        return keras.tree.map_structure(lambda t: t.detach().cpu().numpy(), outputs)

    return run
