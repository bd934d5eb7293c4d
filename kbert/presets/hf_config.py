"""Hugging Face `config.json` <-> kbert arguments, in both directions."""

from kbert.layers.activations import get_activation
from kbert.models.classifier import BertClassifier
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.token_classifier import BertTokenClassifier

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
    """`BertBackbone` arguments from an HF BERT config; refuses non-BERT models.

    Example:
    >>> backbone_arguments({"hidden_size": 384, "num_hidden_layers": 6, ...}, "dir")
    {'vocabulary_size': 30522, 'num_layers': 6, 'hidden_dim': 384, ...}
    """
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


def classifier_arguments(config, head_loaded):
    """`BertClassifier` arguments: labels and problem type come with the head.

    Example:
    >>> classifier_arguments({"id2label": {"0": "neg", "1": "pos"}}, True)["num_classes"]
    2
    """
    if not head_loaded:
        return {"dropout": _classifier_dropout(config)}
    num_classes, id2label = _labels(config)
    problem_type = config.get("problem_type") or (
        "regression" if num_classes == 1 else "single_label"
    )
    return {
        "num_classes": num_classes,
        "id2label": id2label,
        "problem_type": problem_type,
        "dropout": _classifier_dropout(config),
    }


def token_classifier_arguments(config, head_loaded):
    """`BertTokenClassifier` arguments: labels come with the head.

    Example:
    >>> token_classifier_arguments({"num_labels": 9}, head_loaded=True)["num_classes"]
    9
    """
    if not head_loaded:
        return {"dropout": _classifier_dropout(config)}
    num_classes, id2label = _labels(config)
    return {
        "num_classes": num_classes,
        "id2label": id2label,
        "dropout": _classifier_dropout(config),
    }


def multiple_choice_arguments(config, head_loaded):
    """`BertMultipleChoice` arguments; HF configs do not say `num_choices`.

    Example:
    >>> multiple_choice_arguments({"num_choices": 4}, head_loaded=True)["num_choices"]
    4
    """
    arguments = {"dropout": _classifier_dropout(config)}
    if "num_choices" in config:  # written by kbert's save_hf; HF does not store it
        arguments["num_choices"] = config["num_choices"]
    return arguments


def _classifier_dropout(config):
    dropout = config.get("classifier_dropout")
    return config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout


# kbert class -> its arguments read from a config (all of them when the
# checkpoint has the head, the ones that do not shape it otherwise).
TASK_ARGUMENTS = {
    BertClassifier: classifier_arguments,
    BertTokenClassifier: token_classifier_arguments,
    BertMultipleChoice: multiple_choice_arguments,
}


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
    >>> hf_config(classifier, "BertForSequenceClassification", "float32")["num_labels"]
    2
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
    if isinstance(model, (BertClassifier, BertTokenClassifier)):
        id2label = model.id2label or {i: f"LABEL_{i}" for i in range(model.num_classes)}
        config["id2label"] = {str(i): label for i, label in sorted(id2label.items())}
        config["label2id"] = {label: i for i, label in sorted(id2label.items())}
        config["classifier_dropout"] = model.dropout
    if isinstance(model, BertClassifier):
        config["problem_type"] = PROBLEM_TYPES_TO_HF[model.problem_type]
    if isinstance(model, BertMultipleChoice):
        config["num_choices"] = model.num_choices
        config["classifier_dropout"] = model.dropout
    return config
