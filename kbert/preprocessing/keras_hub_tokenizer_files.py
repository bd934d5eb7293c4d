"""keras-hub's tokenizer files: what `save_to_preset` writes beside a BERT model.

`tokenizer.json` is a keras-hub layer config (not Hugging Face's file of the
same name), the vocabulary is `assets/tokenizer/vocabulary.txt` and the
packing settings are in `preprocessor.json`.
"""

import os

from kbert.preprocessing.vocabulary import load_vocabulary
from kbert.utils.text_files import read_json

TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_PATH = os.path.join("assets", "tokenizer", "vocabulary.txt")
PREPROCESSOR_FILE = "preprocessor.json"
REGISTERED_PREFIX = "keras_hub>"
# keras-hub's `truncate` -> kbert's `truncation`. round_robin gives each
# segment half the budget unless one is shorter, as longest_first does (they
# differ only on which segment gets the odd token).
TRUNCATIONS = {"round_robin": "longest_first"}


def is_keras_hub_config(path):
    """Whether a JSON file is a keras-hub object config (`"keras_hub>..."`).

    Example:
    >>> is_keras_hub_config(os.path.join(minilm_dir, "config.json"))
    False
    """
    if not os.path.isfile(path):
        return False
    data = read_json(path)
    return isinstance(data, dict) and str(data.get("registered_name", "")).startswith(
        REGISTERED_PREFIX
    )


def is_keras_hub_tokenizer(directory):
    """Whether a directory holds keras-hub tokenizer files (its vocabulary
    asset first: an HF `tokenizer.json` is large to parse)."""
    directory = os.fspath(directory)
    return os.path.isfile(os.path.join(directory, VOCABULARY_PATH)) and is_keras_hub_config(
        os.path.join(directory, TOKENIZER_FILE)
    )


def read_keras_hub_tokenizer(directory):
    """`{"vocabulary", "lowercase", "strip_accents"}` of a keras-hub `BertTokenizer`."""
    directory = os.fspath(directory)
    path = os.path.join(directory, TOKENIZER_FILE)
    data = read_json(path)
    if data.get("class_name") != "BertTokenizer":
        raise ValueError(
            f"{path}: a keras-hub {data.get('class_name')!r}, not a BertTokenizer; "
            "kbert reads WordPiece (BERT) tokenizers only."
        )
    config = data.get("config") or {}
    if config.get("suffix_indicator", "##") != "##":
        raise ValueError(f"{path}: only the '##' suffix indicator is supported.")
    vocabulary_path = os.path.join(directory, VOCABULARY_PATH)
    if not os.path.isfile(vocabulary_path):
        raise ValueError(
            f"{path} is a keras-hub tokenizer, but its vocabulary "
            f"{vocabulary_path} is missing."
        )
    return {
        "vocabulary": load_vocabulary(vocabulary_path),
        "lowercase": bool(config.get("lowercase", False)),
        "strip_accents": bool(config.get("strip_accents", False)),
    }


def read_keras_hub_preprocessor(directory):
    """`{"sequence_length", "truncation"}` from keras-hub's `preprocessor.json`."""
    path = os.path.join(os.fspath(directory), PREPROCESSOR_FILE)
    if not os.path.isfile(path):
        return {}
    config = read_json(path).get("config") or {}
    result = {}
    if config.get("sequence_length"):
        result["sequence_length"] = int(config["sequence_length"])
    truncate = config.get("truncate", "round_robin")
    if truncate not in TRUNCATIONS:
        raise ValueError(
            f"{path}: truncate={truncate!r} has no kbert equivalent; supported: "
            f"{sorted(TRUNCATIONS)}."
        )
    result["truncation"] = TRUNCATIONS[truncate]
    return result
