"""What kbert's string layers share: TF tensors in and out on any backend.

Keras converts a layer's inputs to backend tensors before `call`; strings
have no JAX or torch tensor, and inside `tf.data.Dataset.map` the inputs are
symbolic TF tensors that must stay TF. So these layers switch that
conversion off (as keras-hub's preprocessing layers do), take Python strings,
NumPy arrays or TF tensors, run TF ops, and only when called eagerly on the
JAX or torch backend hand back backend tensors.
"""

import keras
import numpy as np

from kbert.utils.strings import checked_string


class PreprocessingLayer(keras.layers.Layer):
    """Base class: no weights, no input conversion, TF ops inside."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def get_build_config(self):
        return None


def in_tf_graph():
    """True while tracing a `tf.function` or a `tf.data` map."""
    import tensorflow as tf  # lazy: TF only when text is tokenized

    return not tf.executing_eagerly()


def as_string_batch(inputs, name="inputs"):
    """`(1-D tf.string tensor, batched)` from strings in any accepted form.

    Accepts a str/bytes (unbatched), a list/tuple/1-D array of them, or a
    string TF tensor of shape `()`, `(batch,)` or `(batch, 1)`. Anything
    else raises a `ValueError` saying what was wrong.
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    if isinstance(inputs, tf.RaggedTensor):
        raise ValueError(f"{name} is a RaggedTensor: pass a 1-D string tensor.")
    if tf.is_tensor(inputs):
        if inputs.dtype != tf.string:
            raise ValueError(
                f"{name} must be strings; received a {inputs.dtype.name} tensor."
            )
        if inputs.shape.rank is None:
            raise ValueError(f"{name} must have a known rank.")
        if not in_tf_graph():
            for index, value in enumerate(np.reshape(inputs.numpy(), [-1])):
                checked_string(value, f"{name}[{index}]")
        tensor = inputs
    elif isinstance(inputs, (str, bytes, np.str_, np.bytes_)):
        tensor = tf.constant(checked_string(inputs, name))
    elif isinstance(inputs, np.ndarray):
        if inputs.dtype.kind not in "USO":
            raise ValueError(
                f"{name} must be strings; received an array of {inputs.dtype}."
            )
        if inputs.ndim > 2 or (inputs.ndim == 2 and inputs.shape[1] != 1):
            raise ValueError(
                f"{name} must be 1-D (one string per example); received an "
                f"array of shape {inputs.shape}."
            )
        flat = [
            checked_string(value, f"{name}[{index}]")
            for index, value in enumerate(np.reshape(inputs, [-1]).tolist())
        ]
        tensor = tf.reshape(tf.constant(flat, tf.string), inputs.shape)
    elif isinstance(inputs, (list, tuple)):
        flat = [
            checked_string(value, f"{name}[{index}]") for index, value in enumerate(inputs)
        ]
        tensor = tf.constant(flat, dtype=tf.string, shape=[len(flat)])
    else:
        raise ValueError(
            f"{name} must be a string, a list of strings, or a string tensor; "
            f"received {type(inputs).__name__} {inputs!r:.80}."
        )
    rank = tensor.shape.rank
    if rank == 0:
        return tensor[None], False
    if rank == 2 and tensor.shape[1] == 1:
        return tensor[:, 0], True
    if rank != 1:
        raise ValueError(
            f"{name} must be 1-D (one string per example); received shape {tensor.shape}."
        )
    return tensor, True


def to_backend(outputs):
    """Eager TF results as backend tensors (lists for ragged ones).

    In a TF graph, or on the TensorFlow backend, TF tensors are returned as
    they are.
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    if in_tf_graph() or keras.config.backend() == "tensorflow":
        return outputs

    def convert(value):
        if isinstance(value, tf.RaggedTensor):
            return value.to_list()
        if isinstance(value, tf.Tensor):
            return keras.ops.convert_to_tensor(value.numpy())
        return value

    return keras.tree.map_structure(convert, outputs)
