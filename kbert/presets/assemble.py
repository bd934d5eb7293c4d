"""Building the kbert model a converted checkpoint loads into.

Shared by the Hugging Face and Google converters: the backbone config read
from the checkpoint, the user's overrides (backbone config keys go to the
backbone, the rest to the task), and task arguments read from the checkpoint
(e.g. `num_classes` from a classifier head).
"""

import difflib
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
    return arguments, not conflicts


def accepted_arguments(cls):
    """The `from_preset` overrides `cls` takes: backbone config keys, and a
    task's own arguments.

    Example:
    >>> "num_classes" in accepted_arguments(kbert.BertClassifier)
    True
    """
    if issubclass(cls, BertBackbone):
        return backbone_keys()
    return backbone_keys() | MODEL_ARGUMENTS | (set(task_parameters(cls)) - {"backbone"})


def check_overrides(cls, overrides, preprocessor_keys=(), no_preprocessor=None):
    """Raises a `ValueError` for an override that neither the backbone config,
    `cls` nor its preprocessor (`preprocessor_keys`) takes, naming the closest
    valid name. `no_preprocessor` says why preprocessor keys go unused.

    Every checkpoint format goes through this (`kbert.presets.formats.load_preset`).

    Example:
    >>> check_overrides(kbert.BertClassifier, {"num_clases": 5})
    Traceback (most recent call last):
    ...
    ValueError: num_clases is not an argument of ...; did you mean num_classes? ...
    """
    valid, keys = accepted_arguments(cls), backbone_keys()
    problems = []
    for name in sorted(set(overrides) - valid):
        if name in preprocessor_keys:
            if no_preprocessor:
                problems.append(f"{name} sets the preprocessor, but {no_preprocessor}")
            continue
        close = difflib.get_close_matches(name, sorted(valid | set(preprocessor_keys)), 1)
        hint = f"; did you mean {close[0]}?" if close else "."
        problems.append(f"{name} is not an argument of {cls.__name__}.from_preset{hint}")
    if problems:
        unknown = sorted(set(overrides) - valid)
        own = (
            "" if issubclass(cls, BertBackbone) else f" and its own {sorted(valid - keys)}"
        )
        extra = f", and {sorted(preprocessor_keys)}" if not no_preprocessor else ""
        raise ValueError(
            " ".join(problems) + f" ({cls.__name__}.from_preset got unknown arguments "
            f"{unknown}; it takes the BertBackbone config keys{own}{extra}.)"
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
        return build_backbone(cls, backbone_config, overrides), True
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
