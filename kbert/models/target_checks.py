"""check_targets: training targets checked before Keras sees them.

Out-of-range class ids give no error on JAX (the model trains on them),
and deep backend errors on TensorFlow and torch; float class ids are
truncated, a NaN regression target turns every weight NaN, and a label
more or less than there are examples trains without notice. Each task
model describes its targets with `TargetRule`s (`Task.target_rules`), and
`fit` / `evaluate` check concrete targets with `check_targets`: one
`ValueError` naming the problem, the value and its position.
"""

import dataclasses

import numpy as np

from kbert.models.id_ranges import _concrete_numpy

CLASS_IDS = "class_ids"  # integer ids in [0, classes) (or `ignore`)
MULTI_HOT = "multi_hot"  # (examples, classes) of 0 and 1
FINITE = "finite"  # any finite number


@dataclasses.dataclass(frozen=True)
class TargetRule:
    """What one target holds: `kind` (`"class_ids"`, `"multi_hot"` or
    `"finite"`), `classes` (how many), `ignore` (an id the loss skips,
    e.g. -100; `classes=None`: as many as tokens), `per_token` (one value per
    token, not per example), `model` (how messages name the model, e.g.
    `"BertClassifier(num_classes=3)"`) and `noun` (what the ids are).
    """

    kind: str
    classes: int = None
    ignore: int = None
    per_token: bool = False
    model: str = "the model"
    noun: str = "class ids"


def _position(name, index):
    return f"{name}[{', '.join(str(int(i)) for i in index)}]"


def _value(value):
    value = value.item() if hasattr(value, "item") else value
    return repr(value) if isinstance(value, (str, bytes)) else str(value)


def check_targets(y, rule, examples, tokens=None, name="labels"):
    """Raises a `ValueError` when concrete targets `y` do not fit `rule` (a
    `TargetRule`, or a dict of them for a model with several outputs) for
    `examples` examples of `tokens` tokens each. Symbolic values are not
    checked.

    Example:
    >>> rule = TargetRule("class_ids", classes=3, model="BertClassifier(num_classes=3)")
    >>> check_targets(np.array([0, 2, 1]), rule, examples=3)
    >>> try:
    ...     check_targets(np.array([0, 1, 5]), rule, examples=3)
    ... except ValueError as error:
    ...     print(error)
    labels[2] is 5; BertClassifier(num_classes=3) takes class ids 0..2.
    """
    if y is None:
        raise ValueError(f"{name} is None; {rule_model(rule)} trains on targets `y`.")
    if isinstance(rule, dict):
        if isinstance(y, (list, tuple)):
            # Keras would pair a sequence with the outputs in sorted-name
            # order ("end_logits" before "start_logits"), not the user's.
            model = next(iter(rule.values())).model
            raise ValueError(
                f"{name} is a {type(y).__name__} of {len(y)}; {model} takes a dict "
                f"keyed by its outputs {sorted(rule)}, so no target meets the wrong one."
            )
        if not isinstance(y, dict):
            return  # an array: Keras refuses it against the outputs' dict
        for key, sub_rule in rule.items():
            if key not in y:
                raise ValueError(
                    f"{name} has no {key!r}; {sub_rule.model} takes {sorted(rule)}; "
                    f"received {sorted(y)}."
                )
            check_targets(y[key], sub_rule, examples, tokens, f"{name}[{key!r}]")
        return
    values = _concrete_numpy(y)
    if values is None:
        return
    if rule.kind == CLASS_IDS and rule.classes is None and tokens is not None:
        rule = dataclasses.replace(rule, classes=tokens)
    if values.dtype.kind in "OUS":
        flat = values.reshape(-1)
        at = next((i for i, v in enumerate(flat) if isinstance(v, (str, bytes))), None)
        if at is not None or values.dtype.kind in "US":
            at = at or 0
            index = np.unravel_index(at, values.shape) if values.ndim else ()
            raise ValueError(
                f"{_position(name, index) if values.ndim else name} is "
                f"{_value(flat[at])}, a string; {rule.model} takes {_allowed(rule)} "
                "(map label names to ids first)."
            )
        values = values.astype(float)
    if values.dtype == bool:
        values = values.astype(np.int64)
    if values.ndim == 0:
        raise ValueError(
            f"{name} is one value ({_value(values)}) for {examples} examples; "
            f"{rule.model} takes one target per example."
        )
    if values.shape[0] != examples:
        raise ValueError(
            f"{name} holds {values.shape[0]} targets for {examples} examples; "
            f"{rule.model} takes one target per example."
        )
    _check_shape(values, rule, examples, tokens, name)
    _check_values(values, rule, name)


def rule_model(rule):
    """The model a rule (or a dict of rules) describes, for messages.

    Example:
    >>> rule_model(TargetRule("finite", model="BertClassifier(regression)"))
    'BertClassifier(regression)'
    """
    if isinstance(rule, dict):
        return next(iter(rule.values())).model
    return rule.model


def _allowed(rule):
    if rule.kind == CLASS_IDS:
        text = f"{rule.noun} 0..{rule.classes - 1}"
        return text if rule.ignore is None else f"{text} (or {rule.ignore} to ignore)"
    if rule.kind == MULTI_HOT:
        return f"multi-hot targets of 0 and 1, {rule.classes} per example"
    return "finite numbers"


def _check_shape(values, rule, examples, tokens, name):
    shape = values.shape
    if rule.per_token:
        expected = (examples, tokens)
        if tokens is not None and shape != expected:
            raise ValueError(
                f"{name} has shape {shape}; {rule.model} takes one label per token: "
                f"shape {expected} (-100 where a token has none)."
            )
        return
    if rule.kind == MULTI_HOT:
        if shape != (examples, rule.classes):
            raise ValueError(
                f"{name} has shape {shape}; {rule.model} takes {_allowed(rule)}: "
                f"shape {(examples, rule.classes)}."
            )
        return
    if rule.kind == CLASS_IDS:
        if values.ndim == 2 and shape[1] == rule.classes and rule.classes > 1:
            raise ValueError(
                f"{name} has shape {shape}, one-hot rows; {rule.model} takes "
                f"{_allowed(rule)}, one per example (e.g. `labels.argmax(-1)`)."
            )
        if values.ndim > 2 or (values.ndim == 2 and shape[1] != 1):
            raise ValueError(
                f"{name} has shape {shape}; {rule.model} takes {_allowed(rule)}, "
                f"one per example: shape ({examples},)."
            )
        return
    if values.ndim > 1 and int(np.prod(shape[1:])) != (rule.classes or 1):
        raise ValueError(
            f"{name} has shape {shape}; {rule.model} takes {rule.classes or 1} "
            "value(s) per example."
        )


def _first(mask):
    return tuple(np.argwhere(mask)[0])


def _check_values(values, rule, name):
    if values.size == 0:
        return
    floats = np.issubdtype(values.dtype, np.floating)
    if floats and not np.isfinite(values).all():
        index = _first(~np.isfinite(values))
        raise ValueError(
            f"{_position(name, index)} is {_value(values[index])}; {rule.model} "
            f"takes {_allowed(rule)}."
        )
    if rule.kind == FINITE:
        return
    if floats and not (values == np.round(values)).all():
        index = _first(values != np.round(values))
        raise ValueError(
            f"{_position(name, index)} is {_value(values[index])}, not a whole number; "
            f"{rule.model} takes {_allowed(rule)}."
        )
    if rule.kind == MULTI_HOT:
        bad = (values != 0) & (values != 1)
    else:
        bad = (values < 0) | (values >= rule.classes)
        if rule.ignore is not None:
            bad &= values != rule.ignore
    if bad.any():
        index = _first(bad)
        value = values[index]
        value = int(value) if floats else value
        raise ValueError(
            f"{_position(name, index)} is {_value(value)}; {rule.model} takes "
            f"{_allowed(rule)}."
        )
