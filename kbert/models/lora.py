"""LoRA on kbert models, with Keras' own LoRA Dense (as keras-hub does).

`backbone.enable_lora(rank)` freezes the backbone and adds trainable
low-rank factors `lora_kernel_a` (in, rank) and `lora_kernel_b` (rank, out)
to the Dense sublayers named in `target_names` (default `query` and
`value`, as LoRA's authors and keras-hub do); the kernel a layer computes
with is `kernel + (alpha / rank) * a @ b`. The task head (outside the
backbone) stays trainable. Keras writes the merged kernel whenever a LoRA
layer is saved (`.keras`, `save_weights`, `save_to_preset`), so a saved
LoRA model loads as a plain one; `merge_lora()` does the same in memory and
every exporter merges before it writes.

Example (on a model of its own: LoRA changes the backbone in place):
>>> small = kbert.BertBackbone(
...     vocabulary_size=41, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)
>>> classifier = kbert.BertClassifier(small, num_classes=2)
>>> classifier.backbone.enable_lora(4)
>>> sorted({v.path.split("/")[-1] for v in classifier.trainable_weights})
['bias', 'kernel', 'lora_kernel_a', 'lora_kernel_b']
>>> plain = classifier.merge_lora()
>>> plain.backbone.lora_rank is None
True
"""

import os
import tempfile
import warnings

import keras
import numpy as np

from kbert.utils.artifact_kinds import LORA_RANK_KEY, check_target
from kbert.utils.atomic import atomic_file

DENSE_NAMES = (
    "query",
    "key",
    "value",
    "attention_output",
    "intermediate",
    "output",
    "pooler",
)


def dense_sublayers(backbone, names=DENSE_NAMES):
    """The backbone's Dense sublayers named in `names`, layer by layer, pooler last."""
    layers = [
        getattr(block, "output_dense" if name == "output" else name)
        for block in backbone.transformer_layers
        for name in names
        if name != "pooler"
    ]
    return layers + ([backbone.pooler] if "pooler" in names else [])


def lora_layers(model):
    """The LoRA-enabled Dense layers of a backbone or task model."""
    backbone = getattr(model, "backbone", model)
    return [layer for layer in dense_sublayers(backbone, DENSE_NAMES) if layer.lora_enabled]


def _head_variables(model):
    if not hasattr(model, "backbone"):
        return []
    backbone_ids = {id(v) for v in model.backbone.weights}
    return [v for v in model.weights if id(v) not in backbone_ids]


def trainable_summary(model):
    """`(trainable, total, text)`: how many weights `fit` trains, and a line saying so.

    Example:
    >>> small = kbert.BertBackbone(
    ...     vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=4, intermediate_dim=8)
    >>> trainable_summary(small)[2]
    'trains all 2,296 weights'
    """
    trainable = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    total = sum(int(np.prod(v.shape)) for v in model.weights)
    backbone = getattr(model, "backbone", model)
    if backbone.lora_rank is None:
        return trainable, total, f"trains all {trainable:,} weights"
    text = (
        f"trains {trainable:,} of {total:,} weights ({100 * trainable / total:.2f}%): "
        f"LoRA rank {backbone.lora_rank} on {', '.join(backbone.lora_target_names)}"
        + (" and the head" if backbone is not model else "")
    )
    return trainable, total, text


class LoraBackbone:
    """`enable_lora` for `BertBackbone` (see `kbert.models.lora`)."""

    lora_rank = None

    def enable_lora(self, rank, target_names=("query", "value"), alpha=None):
        """Freezes the backbone and adds rank-`rank` LoRA factors to the Dense
        sublayers named in `target_names` (any of `DENSE_NAMES`); `alpha`
        (default `rank`) scales the update by `alpha / rank`."""
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            raise ValueError(f"enable_lora(rank) needs a positive integer; got {rank!r}.")
        names = (target_names,) if isinstance(target_names, str) else tuple(target_names)
        unknown = sorted(set(names) - set(DENSE_NAMES))
        if unknown or not names:
            raise ValueError(
                f"enable_lora(target_names=...) takes names of {list(DENSE_NAMES)}; "
                f"got {list(names)}."
            )
        if self.lora_rank is not None:
            raise ValueError(f"LoRA is already enabled (rank {self.lora_rank}).")
        if any(layer.quantization_mode for layer in dense_sublayers(self, names)):
            raise ValueError("enable_lora on a quantized backbone is not supported.")
        self.trainable = True
        for layer in self._flatten_layers(include_self=False):
            layer.trainable = False
        for layer in dense_sublayers(self, names):
            layer.trainable = True
            layer.enable_lora(rank, lora_alpha=alpha)
            layer._kernel.trainable = False  # Keras does this too; said here
            layer.bias.trainable = False  # only the low-rank factors train
        self.lora_rank = rank
        self.lora_target_names = names


class LoraModel:
    """Saving, loading and merging LoRA weights, on backbones and task models."""

    def save_lora_weights(self, path, overwrite=False):
        """Writes the LoRA factors (and a task model's head weights) to `path`
        (`.npz`), atomically; `load_lora_weights` reads them back. A file at
        `path` that kbert did not write is refused unless `overwrite=True`."""
        layers = lora_layers(self)
        if not layers:
            raise ValueError(f"{self.name} has no LoRA layers: call enable_lora first.")
        if not os.fspath(path).endswith(".npz"):
            raise ValueError(f"LoRA weights are written as .npz; got {os.fspath(path)!r}.")
        check_target(path, "lora_weights", overwrite)
        arrays = {LORA_RANK_KEY: np.asarray(layers[0].lora_rank)}
        for layer in layers:
            for name in ("lora_kernel_a", "lora_kernel_b"):
                arrays[f"{layer.path}/{name}"] = keras.ops.convert_to_numpy(
                    getattr(layer, name)
                )
        for variable in _head_variables(self):
            arrays[variable.path] = keras.ops.convert_to_numpy(variable)
        with atomic_file(path) as tmp, open(tmp, "wb") as file:
            np.savez(file, **arrays)

    def load_lora_weights(self, path):
        """Reads `save_lora_weights`' file into this model, whose LoRA layers
        (rank and targets) must be the ones that wrote it."""
        with np.load(path, allow_pickle=False) as file:
            arrays = dict(file)
        rank = int(arrays.pop(LORA_RANK_KEY, -1))
        layers = lora_layers(self)
        if not layers or layers[0].lora_rank != rank:
            have = layers[0].lora_rank if layers else None
            raise ValueError(
                f"{path}: LoRA weights of rank {rank}, but {self.name} has LoRA rank "
                f"{have}; call backbone.enable_lora({rank}, target_names=...) first."
            )
        variables = {
            f"{layer.path}/{name}": getattr(layer, name)
            for layer in layers
            for name in ("lora_kernel_a", "lora_kernel_b")
        }
        variables.update({v.path: v for v in _head_variables(self)})
        if set(arrays) != set(variables):
            missing, extra = (
                sorted(set(variables) - set(arrays)),
                sorted(set(arrays) - set(variables)),
            )
            raise ValueError(
                f"{path} does not fit {self.name}: missing {missing[:5]}, "
                f"unexpected {extra[:5]}."
            )
        for name, variable in variables.items():
            if tuple(arrays[name].shape) != tuple(variable.shape):
                raise ValueError(
                    f"{path}: {name} has shape {arrays[name].shape}, the model's "
                    f"{tuple(variable.shape)}."
                )
            variable.assign(arrays[name])

    def merge_lora(self):
        """A new model of the same class with the LoRA updates merged into the
        kernels (Keras' own merge, as saving does); `self` if it has no LoRA."""
        if not lora_layers(self):
            return self
        config = self.get_config()
        if "backbone" in config:  # a task: shares this model's preprocessor
            config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
            config["preprocessor"] = getattr(self, "preprocessor", None)
            plain = type(self)(**config)
        else:
            plain = type(self).from_config(config)
        with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
            # The file holds this model's optimizer state too; `plain` has none.
            warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
            weights = os.path.join(directory, "merged.weights.h5")
            self.save_weights(weights)
            plain.load_weights(weights)
        return plain
