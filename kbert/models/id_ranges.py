"""check_id_ranges: token and segment ids inside their embedding tables.

An id outside its table gives no error on any backend: XLA clamps it (the
output of id V-1), JAX gathers NaN, torch raises an IndexError from deep in
the embedding. This check turns all three into one `ValueError`.
"""

import keras
import numpy as np

# What `token_ids` holds, by rank.
ID_SHAPES = {2: "(batch, sequence_length)", 3: "(batch, num_choices, sequence_length)"}


def check_id_shapes(inputs, rank=2, max_length=None):
    """Raises a `ValueError` naming `token_ids` when it is None, text, not of
    `rank` axes, or holds no tokens or more than `max_length` per row (Keras'
    and the backends' errors for these come from deep inside the graph).
    Symbolic values are checked on the axes they know.

    Example:
    >>> try:
    ...     check_id_shapes({"token_ids": np.zeros((1, 0), "int32")}, 2, 512)
    ... except ValueError as error:
    ...     print(error)
    Input 'token_ids' has shape (1, 0): no tokens; each row takes 1 to 512 ids.
    """
    if not isinstance(inputs, dict) or "token_ids" not in inputs:
        return
    value = inputs["token_ids"]
    want = ID_SHAPES.get(rank, f"{rank} axes")
    if value is None:
        raise ValueError(
            f"Input 'token_ids' is None; it takes integer ids of shape {want}."
        )
    if not hasattr(value, "shape"):
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "USO":
        raise ValueError(
            f"Input 'token_ids' holds {value.dtype} values; ids are integers (e.g. "
            "int32). Raw text goes to a model with a preprocessor."
        )
    shape = tuple(value.shape)
    if len(shape) != rank:
        raise ValueError(f"Input 'token_ids' has shape {shape}; it takes shape {want}.")
    limit = "max_sequence_length" if max_length is None else max_length
    if shape[-1] == 0:
        raise ValueError(
            f"Input 'token_ids' has shape {shape}: no tokens; each row takes 1 to "
            f"{limit} ids."
        )
    if max_length is not None and shape[-1] is not None and shape[-1] > max_length:
        raise ValueError(
            f"Input 'token_ids' has sequence length {shape[-1]}, longer than "
            f"max_sequence_length={max_length}; expected shape (batch, <= "
            f"{max_length}). Truncate the input (BertPreprocessor(sequence_length=...) "
            "does)."
        )


def check_id_ranges(inputs, vocabulary_size, num_segments):
    """Raises a `ValueError` if a concrete `token_ids` / `segment_ids` value is
    negative or not below its table size (`vocabulary_size`, `num_segments`).

    The message names the input, the bad value and its position (row, ...,
    token index). It costs one min and one max per input; the position is
    only searched on failure. Values that are not concrete (symbolic Keras
    tensors, `tf.function` graphs, JAX tracers, CUDA torch tensors) are not
    checked: inside a compiled graph a user builds themself, an out-of-range
    id is not caught and gives what the backend gives (clamped on
    TensorFlow/XLA, NaN on JAX, an IndexError on torch). kbert's `__call__`,
    `predict`, `evaluate` and `fit` on in-memory arrays check before Keras
    sees the data.

    Example:
    >>> check_id_ranges({"token_ids": np.array([[2, 5, 3]])}, 6, 2)
    >>> try:
    ...     check_id_ranges({"token_ids": np.array([[2, 9, 3]])}, 6, 2)
    ... except ValueError as error:
    ...     print(str(error).split(", outside")[0])
    Input 'token_ids' holds id 9 at position (row 0, token 1)
    """
    if not isinstance(inputs, dict):
        return
    limits = {
        "token_ids": (vocabulary_size, "vocabulary_size"),
        "segment_ids": (num_segments, "num_segments"),
    }
    for name, (size, size_name) in limits.items():
        values = _concrete_numpy(inputs.get(name))
        if values is None or values.size == 0:
            continue
        if not (np.issubdtype(values.dtype, np.integer) or values.dtype == bool):
            # Keras would cast 4.5 to 4 without a word.
            raise ValueError(
                f"Input {name!r} holds {values.dtype} values; ids are integers "
                "(e.g. int32)."
            )
        if values.min() >= 0 and values.max() < size:
            continue
        bad = tuple(int(i) for i in np.argwhere((values < 0) | (values >= size))[0])
        if len(bad) == 1:
            where = f"token {bad[0]}"
        else:
            where = ", ".join(
                [f"row {bad[0]}"] + [f"index {i}" for i in bad[1:-1]] + [f"token {bad[-1]}"]
            )
        raise ValueError(
            f"Input {name!r} holds id {values[bad]} at position ({where}), outside "
            f"[0, {size}) ({size_name}={size})."
        )


def _concrete_numpy(value):
    """`value` as a NumPy array when it is concrete and on the host, else None."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf  # lazy: the TensorFlow backend, loaded already

        if isinstance(value, tf.Tensor) and not tf.is_symbolic_tensor(value):
            return value.numpy()
    elif backend == "jax":
        import jax  # lazy: the JAX backend only

        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            return np.asarray(value)
    elif backend == "torch":
        import torch  # lazy: the torch backend only

        # CUDA tensors would cost a device sync per call, and tensor subclasses
        # (torch.export's fake tensors) hold no values: not checked.
        if (
            type(value) is torch.Tensor
            and value.device.type == "cpu"
            and not torch.compiler.is_compiling()
        ):
            return value.detach().numpy()
    return None


class IdRangeCheckedModel:
    """Mixin: `fit`, `evaluate` and `predict` check in-memory input dicts
    with `check_id_ranges` before Keras sees them (datasets are not checked).

    The model, or its `backbone`, has `vocabulary_size` and `num_segments`;
    inputs the model fills in itself are named in `optional_inputs`.
    """

    def check_id_ranges(self, x):
        """`check_id_ranges` with this model's table sizes; a dict missing one
        of the model's inputs is refused by name too (Keras would fail deep
        inside the functional graph)."""
        names = self.input if isinstance(getattr(self, "input", None), dict) else {}
        optional = getattr(self, "optional_inputs", ())
        missing = [
            name
            for name in names
            if isinstance(x, dict) and name not in x and name not in optional
        ]
        if missing:
            raise ValueError(
                f"Missing input{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}: "
                f"{type(self).__name__} takes {sorted(names)}; received {sorted(x)}."
            )
        backbone = getattr(self, "backbone", self)
        check_id_shapes(x, self._id_rank(), backbone.max_sequence_length)
        check_id_ranges(x, backbone.vocabulary_size, backbone.num_segments)

    def _id_rank(self):
        names = self.input if isinstance(getattr(self, "input", None), dict) else {}
        return len(names["token_ids"].shape) if "token_ids" in names else 2

    def __call__(self, inputs, *args, **kwargs):
        backbone = getattr(self, "backbone", self)
        check_id_shapes(inputs, self._id_rank(), backbone.max_sequence_length)
        return super().__call__(inputs, *args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        self.check_id_ranges(x)
        validation_data = kwargs.get("validation_data")
        if isinstance(validation_data, (tuple, list)) and validation_data:
            self.check_id_ranges(validation_data[0])
        return super().fit(x, *args, **kwargs)

    def evaluate(self, x=None, *args, **kwargs):
        self.check_id_ranges(x)
        return super().evaluate(x, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        self.check_id_ranges(x)
        rows = (
            tuple(getattr(x.get("token_ids"), "shape", (None,)))
            if isinstance(x, dict)
            else ()
        )
        if rows and rows[0] == 0:
            # Keras' predict loop fails on zero batches (UnboundLocalError).
            raise ValueError(
                f"{type(self).__name__}.predict got no examples: 'token_ids' has "
                f"shape {rows}; predict takes at least one row."
            )
        return super().predict(x, *args, **kwargs)
