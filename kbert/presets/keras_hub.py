"""Loading keras-hub BERT presets (what keras-hub's `save_to_preset` writes).

A keras-hub preset directory holds `config.json` (the `BertBackbone`
config, `"registered_name": "keras_hub>BertBackbone"`), `model.weights.h5`,
`task.json` / `task.weights.h5` for a task (`BertTextClassifier` loads as a
`BertClassifier`), and the tokenizer files that
`kbert.preprocessing.keras_hub_tokenizer_files` reads. keras-hub's BERT is
BERT with tanh-approximated GELU; its weight names are
`kbert.presets.keras_hub_weight_map`'s.
"""

import os

from kbert.models.backbone import BertBackbone
from kbert.preprocessing.keras_hub_tokenizer_files import is_keras_hub_config
from kbert.presets.assemble import build_model, describe_model, task_parameters
from kbert.presets.checkpoint_files import KerasWeightsReader
from kbert.presets.config_keys import require_config_keys
from kbert.presets.keras_hub_weight_map import BACKBONE_FILE, TASK_FILE, keras_hub_weights
from kbert.presets.weight_map import load_weights, variable_at
from kbert.utils.text_files import read_json

CONFIG = "config.json"
TASK_CONFIG = "task.json"
BACKBONE_KEYS = (
    "vocabulary_size",
    "num_layers",
    "num_heads",
    "hidden_dim",
    "intermediate_dim",
    "max_sequence_length",
)
# keras-hub task class -> (kbert task name, the layout heads it stores).
TASKS = {"BertTextClassifier": ("classifier", ("classifier",))}


def is_keras_hub_directory(directory):
    """Whether a directory holds a keras-hub preset (a keras-hub `config.json`).

    Example:
    >>> is_keras_hub_directory(minilm_dir)
    False
    """
    return is_keras_hub_config(os.path.join(directory, CONFIG))


def _stored_task(directory):
    path = os.path.join(directory, TASK_CONFIG)
    return read_json(path) if os.path.isfile(path) else None


def keras_hub_task(directory):
    """The task a keras-hub preset holds: its `task.json` class, else the backbone."""
    task = _stored_task(directory)
    return TASKS.get((task or {}).get("class_name"), ("backbone",))[0]


def backbone_config(directory):
    """kbert `BertBackbone` arguments from keras-hub's `config.json`."""
    path = os.path.join(directory, CONFIG)
    stored = read_json(path)
    if stored.get("class_name") != "BertBackbone":
        raise ValueError(
            f"{path}: a keras-hub {stored.get('class_name')!r}, not a BertBackbone; "
            "kbert reads keras-hub BERT presets only."
        )
    config = stored.get("config") or {}
    require_config_keys(config, BACKBONE_KEYS, path)
    dropout = config.get("dropout", 0.1)
    return {
        **{key: config[key] for key in BACKBONE_KEYS},
        "num_segments": config.get("num_segments", 2),
        "dropout": dropout,
        "attention_dropout": dropout,
        "hidden_activation": "gelu_approximate",
        "layer_norm_epsilon": 1e-12,
    }


def load_keras_hub_preset(cls, directory, preprocessor, **overrides):
    """Builds `cls` from a keras-hub preset; `Model.from_preset` calls this."""
    task = _stored_task(directory)
    heads, stored = (), {}
    if not issubclass(cls, BertBackbone) and task is not None:
        task_name, task_heads = TASKS.get(task.get("class_name"), (None, ()))
        if task_name == cls.task_name:
            heads = task_heads
            config = task.get("config") or {}
            parameters = task_parameters(cls)
            stored = {k: config[k] for k in ("num_classes", "dropout") if k in parameters}
    model, head_fits = build_model(
        cls, backbone_config(directory), preprocessor, overrides, stored, directory
    )
    heads = heads if head_fits else ()
    files = {"backbone": os.path.join(directory, BACKBONE_FILE)}
    if heads:
        files["task"] = os.path.join(directory, TASK_FILE)
    reader = KerasWeightsReader(files)
    backbone = getattr(model, "backbone", model)
    bound = [
        (
            weight,
            variable_at(
                backbone if not weight.source.startswith("task/") else model, weight.target
            ),
        )
        for weight in keras_hub_weights(backbone.num_layers, backbone.num_heads, heads)
    ]
    load_weights(bound, reader, what=f"{cls.__name__} {describe_model(model)}")
    return model
