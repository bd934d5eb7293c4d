"""Building the kbert model a converted checkpoint loads into.

Shared by the Hugging Face and Google converters: the backbone config read
from the checkpoint, the user's overrides (backbone config keys go to the
backbone, the rest to the task), and task arguments read from the checkpoint
(e.g. `num_classes` from a classifier head).
"""

import inspect
import logging

from kbert.models.backbone import BertBackbone

logger = logging.getLogger("kbert.presets")

# Task arguments that fix a head's shape: overriding one with another value
# than the checkpoint's means the stored head cannot be used.
HEAD_SHAPE_ARGUMENTS = ("num_classes",)
# Arguments every task passes on to `Task` / `keras.Model`.
MODEL_ARGUMENTS = {"name", "compile"}


def _parameters(function):
    return {
        name: parameter
        for name, parameter in inspect.signature(function).parameters.items()
        if name != "self" and parameter.kind is not parameter.VAR_KEYWORD
    }


def task_parameters(cls):
    """The constructor parameters of the kbert class `cls` is or derives from.

    A user's subclass may take `**kwargs` only: its kbert base names them.

    Example:
    >>> sorted(task_parameters(kbert.BertMultipleChoice))
    ['backbone', 'dropout', 'num_choices', 'preprocessor']
    """
    kbert_class = next(k for k in cls.__mro__ if k.__module__.startswith("kbert.models."))
    return _parameters(kbert_class.__init__)


def backbone_keys():
    """The names `BertBackbone` accepts as config (`dropout`, `dtype`, ...).

    Example:
    >>> {"dropout", "dtype", "output_hidden_states"} <= backbone_keys()
    True
    """
    return set(_parameters(BertBackbone.__init__))


def build_backbone(cls, config, overrides):
    """`cls(**config)` with the backbone keys of `overrides` applied (and removed).

    Example:
    >>> overrides = {"dropout": 0.0}
    >>> build_backbone(kbert.BertBackbone, backbone.get_config(), overrides).dropout
    0.0
    >>> overrides  # consumed
    {}
    """
    config = dict(config)
    for key in sorted(backbone_keys() & set(overrides)):
        config[key] = overrides.pop(key)
    return cls(**config)


def task_arguments(cls, stored, overrides, source):
    """The task's constructor arguments and whether the stored head fits them.

    `stored` holds arguments read from the checkpoint (only when it has this
    task's head); `overrides` win over them. A required argument that neither
    gives raises a `ValueError` saying what to pass.

    Example:
    >>> task_arguments(kbert.BertClassifier, {"num_classes": 2}, {}, "dir")
    ({'num_classes': 2}, True)
    """
    stored = dict(stored)
    conflicts = [
        key
        for key in HEAD_SHAPE_ARGUMENTS
        if key in stored and key in overrides and overrides[key] != stored[key]
    ]
    if conflicts:
        logger.warning(
            "%s: the checkpoint's %s head has %s, but %s was asked for: the head is "
            "freshly initialized instead of loaded.",
            source,
            cls.__name__,
            ", ".join(f"{key}={stored[key]}" for key in conflicts),
            ", ".join(f"{key}={overrides[key]}" for key in conflicts),
        )
        stored.pop("id2label", None)
    arguments = {**stored, **overrides}
    parameters = task_parameters(cls)
    missing = [
        name
        for name, parameter in parameters.items()
        if parameter.default is parameter.empty
        and name not in ("backbone",)
        and name not in arguments
    ]
    if missing:
        raise ValueError(
            f"{cls.__name__}.from_preset({source!r}): the checkpoint does not say "
            f"{', '.join(missing)}; pass it, e.g. "
            f"{cls.__name__}.from_preset(..., {missing[0]}=...)."
        )
    unknown = sorted(set(arguments) - set(parameters) - MODEL_ARGUMENTS)
    if unknown:
        raise ValueError(
            f"{cls.__name__}.from_preset got unknown arguments {unknown}; it takes "
            f"backbone config keys {sorted(backbone_keys())} and its own arguments "
            f"{sorted(set(parameters) - {'backbone'})}."
        )
    return arguments, not conflicts


def refuse_unused(cls, overrides):
    """Raises when backbone loading left overrides nobody takes.

    Example:
    >>> refuse_unused(kbert.BertBackbone, {"num_classes": 2})
    Traceback (most recent call last):
    ...
    ValueError: BertBackbone.from_preset got unknown arguments ['num_classes']; ...
    """
    if overrides:
        raise ValueError(
            f"{cls.__name__}.from_preset got unknown arguments {sorted(overrides)}; "
            f"a backbone takes {sorted(backbone_keys())}."
        )


def build_model(cls, backbone_config, preprocessor, overrides, stored_arguments, source):
    """The model to load a checkpoint into, and whether its stored head fits it.

    `stored_arguments` are the task arguments the checkpoint gives (empty for
    a backbone). Overrides that are backbone config keys go to the backbone.

    Example:
    >>> model, head_fits = build_model(kbert.BertClassifier, backbone.get_config(), None,
    ...                                {"dropout": 0.0}, {"num_classes": 2}, "dir")
    >>> model.num_classes, model.backbone.dropout, head_fits
    (2, 0.0, True)
    """
    overrides = dict(overrides)
    if issubclass(cls, BertBackbone):
        backbone = build_backbone(cls, backbone_config, overrides)
        refuse_unused(cls, overrides)
        return backbone, True
    backbone = build_backbone(cls.backbone_cls, backbone_config, overrides)
    arguments, head_fits = task_arguments(cls, stored_arguments, overrides, source)
    return cls(backbone=backbone, preprocessor=preprocessor, **arguments), head_fits


def describe_model(model):
    """A one-line summary of a model's backbone config, for messages.

    Example:
    >>> describe_model(backbone)
    '(vocabulary_size=41, num_layers=2, hidden_dim=8, ...)'
    """
    backbone = getattr(model, "backbone", model)
    return (
        f"(vocabulary_size={backbone.vocabulary_size}, num_layers={backbone.num_layers}, "
        f"hidden_dim={backbone.hidden_dim}, num_heads={backbone.num_heads}, "
        f"intermediate_dim={backbone.intermediate_dim}, "
        f"max_sequence_length={backbone.max_sequence_length}, "
        f"num_segments={backbone.num_segments})"
    )
