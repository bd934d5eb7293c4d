"""Declarative weight maps: which checkpoint tensor goes to which kbert variable.

A converter describes a format as a list of `Weight` lines (checkpoint name,
kbert variable path, transform) and hands it to `load_weights`, which checks
every line against the checkpoint (missing, unexpected and misshapen weights
all reported together) before a single variable is assigned. `export_weights`
runs the same lines backwards to write a checkpoint.
"""

import contextlib
import contextvars
import dataclasses
import logging

import keras
import numpy as np
from tqdm.auto import tqdm

logger = logging.getLogger("kbert.presets")

_show_progress = contextvars.ContextVar("kbert_show_progress", default=False)


@dataclasses.dataclass(frozen=True)
class Transform:
    """A checkpoint-layout <-> kbert-layout conversion and its inverse.

    Example:
    >>> TRANSPOSE.to_kbert(np.zeros((3, 2))).shape, TRANSPOSE.checkpoint_shape((2, 3))
    ((2, 3), (3, 2))
    """

    name: str
    to_kbert: callable
    to_checkpoint: callable
    checkpoint_shape: callable  # kbert shape -> the shape the checkpoint stores


AS_IS = Transform("as is", lambda x: x, lambda x: x, tuple)
# torch `Linear.weight` is (out, in); a Keras `Dense.kernel` is (in, out).
TRANSPOSE = Transform(
    "transposed",
    np.transpose,
    lambda x: np.ascontiguousarray(np.transpose(x)),
    lambda shape: tuple(reversed(shape)),
)


@dataclasses.dataclass(frozen=True)
class Weight:
    """One line of a weight map.

    `source` is the tensor's name in the checkpoint, `target` the attribute
    path of the kbert variable from the model it is bound to (integers index
    lists), `aliases` other names a checkpoint may store the same tensor under
    (all that are present must be equal).

    Example:
    >>> weight = Weight("encoder.layer.0.attention.self.query.weight",
    ...                 "transformer_layers.0.query.kernel", TRANSPOSE)
    >>> weight.names
    ('encoder.layer.0.attention.self.query.weight',)
    """

    source: str
    target: str
    transform: Transform = AS_IS
    aliases: tuple = ()

    @property
    def names(self):
        return (self.source,) + tuple(self.aliases)


def variable_at(root, target):
    """The variable at an attribute path such as `transformer_layers.0.query.kernel`.

    Example:
    >>> tuple(variable_at(backbone, "embeddings.token_embedding.embeddings").shape)
    (41, 8)
    >>> variable_at(backbone, "transformer_layers.1.query.kernel").path
    'transformer_layer_1/query/kernel'
    """
    value = root
    for part in target.split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


@contextlib.contextmanager
def progress_bar():
    """Shows a tqdm progress bar over the weights loaded inside the block.

    Example:
    >>> with progress_bar():
    ...     model = kbert.BertBackbone.from_preset("splade_tiny_mlm")
    """
    token = _show_progress.set(True)
    try:
        yield
    finally:
        _show_progress.reset(token)


def _shape_text(shape):
    return str(tuple(int(d) for d in shape))


def _check(bound, reader, unused):
    """All problems of loading `bound` from `reader`, as message lines."""
    available = set(reader.names())
    missing, misshapen, mismatched_aliases = [], [], []
    used = set()
    for weight, variable in bound:
        present = [name for name in weight.names if name in available]
        used.update(present)
        expected = weight.transform.checkpoint_shape(tuple(variable.shape))
        if not present:
            missing.append(
                f"{reader.describe(weight.source)} (expected shape {_shape_text(expected)})"
            )
            continue
        wrong = [name for name in present if tuple(reader.shape(name)) != expected]
        misshapen.extend(
            f"{reader.describe(name)}: shape {_shape_text(reader.shape(name))} in the "
            f"checkpoint, {_shape_text(expected)} expected by {variable.path}"
            for name in wrong
        )
        if len(present) > 1 and not wrong:
            first = reader.read(present[0])
            mismatched_aliases.extend(
                f"{reader.describe(name)} differs from {reader.describe(present[0])}"
                for name in present[1:]
                if not np.array_equal(first, reader.read(name))
            )
    unexpected = [
        f"{reader.describe(name)} (shape {_shape_text(reader.shape(name))})"
        for name in sorted(available - used - set(unused))
    ]
    problems = []
    for title, lines in (
        ("missing weights", missing),
        ("unexpected weights", unexpected),
        ("shape mismatches", misshapen),
        ("copies that disagree", mismatched_aliases),
    ):
        if lines:
            problems.append(f"  {title} ({len(lines)}):")
            problems.extend(f"    {line}" for line in lines)
    return problems


def load_weights(bound, reader, unused=(), what="the model"):
    """Validates a whole checkpoint against a bound weight map, then assigns it.

    `bound` is a list of `(Weight, variable)` pairs; `unused` names checkpoint
    tensors that are known but deliberately not loaded (another task's head,
    buffers). Raises a `ValueError` listing every missing, unexpected or
    misshapen weight, and assigns nothing in that case.

    Example:
    >>> from safetensors.numpy import save_file
    >>> from kbert.presets.checkpoint_files import SafetensorsReader
    >>> from kbert.presets.hf_weight_map import backbone_weights
    >>> lines = backbone_weights(num_layers=2)
    >>> tensors = export_weights([(w, variable_at(backbone, w.target)) for w in lines])
    >>> save_file(tensors, "backbone.safetensors")
    >>> copy = kbert.BertBackbone.from_config(backbone.get_config())
    >>> reader = SafetensorsReader(["backbone.safetensors"])
    >>> load_weights([(w, variable_at(copy, w.target)) for w in lines], reader)
    >>> np.array_equal(copy.pooler.kernel, backbone.pooler.kernel)
    True
    """
    problems = _check(bound, reader, unused)
    if problems:
        raise ValueError(
            f"{reader.path}: the checkpoint does not fit {what}; nothing was loaded.\n"
            + "\n".join(problems)
        )
    available = set(reader.names())
    progress = tqdm(
        bound,
        desc="Reading weights",
        unit="weight",
        disable=not _show_progress.get(),
        leave=False,
    )
    # Everything is read before anything is assigned: a tensor the file cannot
    # deliver (truncated data) must not leave the model half-loaded.
    values, named = [], []
    for weight, variable in progress:
        name = next(name for name in weight.names if name in available)
        value = weight.transform.to_kbert(reader.read(name))
        named.append((reader.describe(name), value))
        if keras.backend.standardize_dtype(value.dtype) != variable.dtype:
            value = keras.ops.cast(value.astype("float32"), variable.dtype)
        values.append(value)
    check_finite(named, reader.path)
    for (_, variable), value in zip(bound, values):
        variable.assign(value)
    logger.info("Loaded %d weights from %s.", len(bound), reader.path)


def non_finite_count(value):
    """How many NaN or infinite entries an array holds (0 for integers)."""
    value = np.asarray(keras.ops.convert_to_numpy(value))
    if not np.issubdtype(value.dtype, np.floating):
        value = value.astype("float32") if value.dtype.kind == "V" else value
        if not np.issubdtype(value.dtype, np.floating):
            return 0
    return int(value.size - np.count_nonzero(np.isfinite(value)))


def check_finite(named_values, path):
    """Raises a `ValueError` naming each tensor of `(name, value)` pairs that
    holds NaN or infinite values, with its count: a checkpoint saved from a
    diverged run, or a corrupted file.

    Example:
    >>> check_finite([("pooler.dense.bias", np.array([0.0, np.nan]))], "model.safetensors")
    Traceback (most recent call last):
    ...
    ValueError: model.safetensors holds non-finite weights ...: pooler.dense.bias: 1 of ...
    """
    bad = [
        f"{name}: {count:,} of {np.size(value):,} values NaN or infinite"
        for name, value in named_values
        if (count := non_finite_count(value))
    ]
    if bad:
        raise ValueError(
            f"{path} holds non-finite weights (nothing was loaded): {'; '.join(bad)}. "
            "It was saved from a diverged run or is corrupted: load an earlier "
            "checkpoint."
        )


def export_weights(bound):
    """The checkpoint tensors for a bound weight map: `{source name: array}`.

    bfloat16 variables are widened to float32 (exactly), since numpy and the
    safetensors numpy API have no bfloat16.

    Example:
    >>> from kbert.presets.hf_weight_map import backbone_weights
    >>> bound = [(w, variable_at(backbone, w.target)) for w in backbone_weights(2)]
    >>> export_weights(bound)["pooler.dense.weight"].shape  # torch layout: (out, in)
    (8, 8)
    """
    tensors = {}
    for weight, variable in bound:
        value = keras.ops.convert_to_numpy(variable)
        if value.dtype not in (np.float32, np.float16, np.float64):
            value = value.astype("float32")
        tensors[weight.source] = np.ascontiguousarray(weight.transform.to_checkpoint(value))
    return tensors
