"""kbert's own preset format: Keras configs and weights, plus tokenizer files.

A preset directory holds:
- `backbone.json`, `backbone.weights.h5`: the backbone config and weights;
- `task.json`, `task.weights.npz`: the task class, its arguments and its head
  weights (only when a task model was saved);
- `vocab.txt`, `tokenizer_config.json`, `preprocessor_config.json`: the
  tokenizer and preprocessor, in the HF file layout (when one is attached).
"""

import json
import os

import keras
import numpy as np

from kbert.models import MODEL_CLASSES
from kbert.models.backbone import BertBackbone
from kbert.presets.assemble import backbone_keys, task_arguments
from kbert.presets.config_keys import require_config_keys
from kbert.presets.hf_config import BACKBONE_KEYS, REQUIRED_KEYS
from kbert.presets.weight_map import check_finite
from kbert.utils.atomic import atomic_directory
from kbert.utils.file_errors import open_npz
from kbert.utils.text_files import read_json

BACKBONE_CONFIG = "backbone.json"
BACKBONE_WEIGHTS = "backbone.weights.h5"
TASK_CONFIG = "task.json"
TASK_WEIGHTS = "task.weights.npz"
FORMAT_VERSION = 1
# The backbone sizes `backbone.json` must state (the HF required keys' names).
REQUIRED_BACKBONE_KEYS = tuple(BACKBONE_KEYS[key][0] for key in REQUIRED_KEYS)


def is_kbert_preset(directory):
    """Whether a directory holds a kbert preset (`backbone.json`).

    Example:
    >>> backbone.save_to_preset("out/preset")
    >>> is_kbert_preset("out/preset")
    True
    """
    return os.path.isfile(os.path.join(directory, BACKBONE_CONFIG))


def kbert_preset_task(directory):
    """The task a kbert preset holds: its `task.json` class, else the backbone.

    Example:
    >>> kbert.BertClassifier(backbone, num_classes=2).save_to_preset("out/classifier")
    >>> kbert_preset_task("out/classifier")
    'classifier'
    """
    task_path = os.path.join(directory, TASK_CONFIG)
    if not os.path.isfile(task_path):
        return "backbone"
    class_name = read_json(task_path)["class_name"]
    return next(
        (cls.task_name for cls in MODEL_CLASSES if cls.__name__ == class_name),
        "backbone",
    )


def head_variables(task):
    """The task's variables that are not the backbone's, in a stable order."""
    backbone_ids = {id(v) for v in task.backbone.weights}
    return [v for v in task.weights if id(v) not in backbone_ids]


def _write_json(path, data):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2, sort_keys=True)


def save_kbert_preset(model, directory):
    backbone = getattr(model, "backbone", model)
    with atomic_directory(directory) as tmp:
        _write_json(
            os.path.join(tmp, BACKBONE_CONFIG),
            {
                "class_name": type(backbone).__name__,
                "config": backbone.get_config(),
                "format_version": FORMAT_VERSION,
            },
        )
        backbone.save_weights(os.path.join(tmp, BACKBONE_WEIGHTS))
        if model is not backbone:
            config = model.get_config()
            config.pop("backbone")
            config.pop("preprocessor", None)
            _write_json(
                os.path.join(tmp, TASK_CONFIG),
                {"class_name": type(model).__name__, "config": config},
            )
            np.savez(
                os.path.join(tmp, TASK_WEIGHTS),
                **{
                    f"{i:04d}:{v.path}": keras.ops.convert_to_numpy(v)
                    for i, v in enumerate(head_variables(model))
                },
            )
        preprocessor = getattr(model, "preprocessor", None)
        if preprocessor is not None:
            preprocessor.save_to_preset(tmp)


def load_head_weights(task, path):
    variables = head_variables(task)
    with open_npz(path) as stored:  # names a truncated file
        keys = sorted(stored.files)
        check_finite([(key.split(":", 1)[-1], stored[key]) for key in keys], path)
        if len(keys) != len(variables):
            raise ValueError(
                f"{path}: holds {len(keys)} head weights {keys}, but "
                f"{type(task).__name__} has {len(variables)}: "
                f"{[v.path for v in variables]}."
            )
        for key, variable in zip(keys, variables):
            value = stored[key]
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(
                    f"{path}: weight {key.split(':', 1)[1]!r} has shape {value.shape}, "
                    f"but {variable.path!r} expects {tuple(variable.shape)}."
                )
            variable.assign(value)


def load_backbone(directory, backbone_cls, overrides):
    """Builds the backbone; consumes the overrides that are backbone config."""
    path = os.path.join(directory, BACKBONE_CONFIG)
    stored = read_json(path)
    require_config_keys(stored, ["config"], path)
    config = dict(stored["config"])
    require_config_keys(config, REQUIRED_BACKBONE_KEYS, path)
    for key in sorted(backbone_keys() & set(overrides)):
        config[key] = overrides.pop(key)
    backbone = backbone_cls.from_config(config)
    weights_path = os.path.join(directory, BACKBONE_WEIGHTS)
    backbone.load_weights(weights_path)
    check_finite([(v.path, v) for v in backbone.weights], weights_path)
    return backbone


def load_kbert_preset(cls, directory, preprocessor, **overrides):
    """Builds `cls` from a kbert preset; `from_preset` calls this.

    Example:
    >>> backbone.save_to_preset("out/preset")
    >>> load_kbert_preset(kbert.BertBackbone, "out/preset", None).num_layers
    2
    """
    overrides = dict(overrides)
    if issubclass(cls, BertBackbone):
        return load_backbone(directory, cls, overrides)
    backbone = load_backbone(directory, cls.backbone_cls, overrides)
    task_path = os.path.join(directory, TASK_CONFIG)
    stored = read_json(task_path) if os.path.isfile(task_path) else {}
    same_task = stored.get("class_name") == cls.__name__
    stored = dict(stored.get("config", {})) if same_task else {}
    stored.pop("name", None)
    arguments, head_fits = task_arguments(cls, stored, overrides, directory)
    model = cls(backbone=backbone, preprocessor=preprocessor, **arguments)
    if same_task and head_fits:
        load_head_weights(model, os.path.join(directory, TASK_WEIGHTS))
    return model
