"""Hugging Face `config.json` <-> kbert arguments, in both directions.

Backbone arguments have one HF key each (`BACKBONE_KEYS`). Task arguments
are read and written by name, for whichever model class takes them: labels
(`num_classes`, `id2label`, `problem_type`: HF `num_labels` / `id2label` /
`problem_type`, only with the head they shape), `dropout`
(`classifier_dropout`) and `num_choices` (kbert's own key; HF does not
store it).
"""

from kbert.layers.activations import get_activation
from kbert.presets.config_keys import require_config_keys

# HF config key -> (kbert backbone argument, BertConfig's default).
BACKBONE_KEYS = {
    "vocab_size": ("vocabulary_size", 30522),
    "num_hidden_layers": ("num_layers", 12),
    "num_attention_heads": ("num_heads", 12),
    "hidden_size": ("hidden_dim", 768),
    "intermediate_size": ("intermediate_dim", 3072),
    "hidden_act": ("hidden_activation", "gelu"),
    "hidden_dropout_prob": ("dropout", 0.1),
    "attention_probs_dropout_prob": ("attention_dropout", 0.1),
    "max_position_embeddings": ("max_sequence_length", 512),
    "type_vocab_size": ("num_segments", 2),
    "layer_norm_eps": ("layer_norm_epsilon", 1e-12),
    "initializer_range": ("initializer_range", 0.02),
}
# The sizes every HF and Google BERT config states; never defaulted.
REQUIRED_KEYS = (
    "vocab_size",
    "num_hidden_layers",
    "num_attention_heads",
    "hidden_size",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
# kbert activation -> HF `hidden_act` (HF's ACT2FN names).
ACTIVATIONS_TO_HF = {
    "gelu": "gelu",
    "gelu_exact": "gelu",
    "gelu_approximate": "gelu_new",
    "gelu_new": "gelu_new",
    "gelu_pytorch_tanh": "gelu_pytorch_tanh",
    "gelu_fast": "gelu_fast",
    "relu": "relu",
    "silu": "silu",
    "swish": "swish",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "linear": "linear",
}
PROBLEM_TYPES_TO_HF = {
    "single_label": "single_label_classification",
    "multi_label": "multi_label_classification",
    "regression": "regression",
}


def backbone_arguments(config, path):
    """`BertBackbone` arguments from an HF (or Google) BERT config; refuses
    non-BERT models and configs that lack a size (`REQUIRED_KEYS`); other
    keys default as `BertConfig` does.

    Example:
    >>> sizes = dict(vocab_size=100, num_hidden_layers=6, num_attention_heads=12,
    ...     hidden_size=384, intermediate_size=1536, max_position_embeddings=512,
    ...     type_vocab_size=2)
    >>> arguments = backbone_arguments(sizes, "dir")
    >>> arguments["hidden_dim"], arguments["num_layers"], arguments["dropout"]
    (384, 6, 0.1)
    """
    require_config_keys(config, REQUIRED_KEYS, path)
    model_type = config.get("model_type", "bert")
    problems = []
    if model_type != "bert":
        problems.append(f"model_type is {model_type!r}, kbert loads 'bert'")
    if config.get("position_embedding_type", "absolute") != "absolute":
        problems.append(
            f"position_embedding_type is {config['position_embedding_type']!r}, kbert "
            "has learned absolute positions only"
        )
    if config.get("is_decoder") or config.get("add_cross_attention"):
        problems.append("it is a decoder / cross-attention model")
    if problems:
        raise ValueError(f"{path}: cannot load this model: {'; '.join(problems)}.")
    arguments = {
        argument: config.get(key, default)
        for key, (argument, default) in BACKBONE_KEYS.items()
    }
    try:
        get_activation(arguments["hidden_activation"])
    except ValueError as error:
        raise ValueError(f"{path}: hidden_act: {error}") from error
    return arguments


def _labels(config):
    id2label = config.get("id2label")
    if id2label:
        return len(id2label), {int(k): v for k, v in id2label.items()}
    return config.get("num_labels", 2), None


def task_arguments_from_hf(parameters, config, head_loaded):
    """The task arguments an HF config gives a class taking `parameters`.

    Labels and the problem type come only with the head they shape
    (`head_loaded`); a class gets only the arguments it takes.

    Example:
    >>> task_arguments_from_hf(["num_classes", "id2label", "dropout"],
    ...                        {"id2label": {"0": "O", "1": "B-PER"}}, head_loaded=True)
    {'num_classes': 2, 'id2label': {0: 'O', 1: 'B-PER'}, 'dropout': 0.1}
    """
    parameters = set(parameters)
    arguments = {}
    if head_loaded and "num_classes" in parameters:
        arguments["num_classes"], arguments["id2label"] = _labels(config)
        if "problem_type" in parameters:
            arguments["problem_type"] = config.get("problem_type") or (
                "regression" if arguments["num_classes"] == 1 else "single_label"
            )
    if "num_choices" in parameters and "num_choices" in config:
        arguments["num_choices"] = config["num_choices"]
    if "dropout" in parameters:
        arguments["dropout"] = _classifier_dropout(config)
    return arguments


def _classifier_dropout(config):
    dropout = config.get("classifier_dropout")
    return config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout


def hf_activation(activation):
    """HF `hidden_act` for a kbert activation name; refuses what HF cannot run."""
    if activation not in ACTIVATIONS_TO_HF:
        raise ValueError(
            f"hidden_activation={activation!r} has no Hugging Face equivalent; "
            f"save_hf supports {sorted(ACTIVATIONS_TO_HF)}."
        )
    return ACTIVATIONS_TO_HF[activation]


def hf_config(model, architecture, dtype):
    """The `config.json` dict for a kbert model saved as `architecture`.

    Example:
    >>> config = hf_config(classifier, "BertForSequenceClassification", "float32")
    >>> config["architectures"], config["id2label"]
    (['BertForSequenceClassification'], {'0': 'LABEL_0', '1': 'LABEL_1'})
    """
    backbone = getattr(model, "backbone", model)
    config = {
        "architectures": [architecture],
        "model_type": "bert",
        "dtype": dtype,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
    }
    for key, (argument, _) in BACKBONE_KEYS.items():
        config[key] = getattr(backbone, argument)
    config["hidden_act"] = hf_activation(backbone.hidden_activation)
    if model is not backbone:
        config.update(task_config(model))
    return config


def task_config(model):
    """The `config.json` keys of a task model's own arguments.

    Example:
    >>> classifier = kbert.BertClassifier(backbone, 2, id2label={0: "neg", 1: "pos"})
    >>> config = task_config(classifier)
    >>> config["id2label"], config["problem_type"], config["classifier_dropout"]
    ({'0': 'neg', '1': 'pos'}, 'single_label_classification', 0.1)
    """
    arguments = model.get_config()
    config = {}
    if "num_classes" in arguments:
        id2label = getattr(model, "id2label", None) or {
            i: f"LABEL_{i}" for i in range(model.num_classes)
        }
        config["id2label"] = {str(i): label for i, label in sorted(id2label.items())}
        config["label2id"] = {label: i for i, label in sorted(id2label.items())}
    if "problem_type" in arguments:
        config["problem_type"] = PROBLEM_TYPES_TO_HF[model.problem_type]
    if "num_choices" in arguments:
        config["num_choices"] = model.num_choices
    if "dropout" in arguments:
        config["classifier_dropout"] = model.dropout
    return config
