"""Hugging Face tokenizer files: `vocab.txt`, `tokenizer_config.json`,
`tokenizer.json`, plus kbert's `preprocessor_config.json`.

Only what a BERT WordPiece tokenizer needs is read: the vocabulary and the
normalizer's `lowercase` / `strip_accents`.
"""

import json
import os

from kbert.preprocessing import keras_hub_tokenizer_files
from kbert.preprocessing.vocabulary import VOCABULARY_FILE, load_vocabulary, save_vocabulary
from kbert.utils.text_files import read_json

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_JSON_FILE = "tokenizer.json"
PREPROCESSOR_CONFIG_FILE = "preprocessor_config.json"


def _from_tokenizer_json(path):
    data = read_json(path)
    model = data.get("model") or {}
    if model.get("type") != "WordPiece":
        raise ValueError(
            f"{path}: the model is {model.get('type')!r}, not a WordPiece (BERT) tokenizer."
        )
    if model.get("continuing_subword_prefix", "##") != "##":
        raise ValueError(f"{path}: only the '##' subword prefix is supported.")
    vocab = model.get("vocab") or {}
    vocabulary = [token for token, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    if [vocab[token] for token in vocabulary] != list(range(len(vocabulary))):
        raise ValueError(f"{path}: the vocabulary ids are not 0..{len(vocab) - 1}.")
    normalizer = data.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        raise ValueError(
            f"{path}: normalizer {normalizer.get('type')!r} is not supported "
            "(only BertNormalizer)."
        )
    return {
        "vocabulary": vocabulary,
        "lowercase": bool(normalizer.get("lowercase", True)),
        "strip_accents": normalizer.get("strip_accents"),
    }


def read_tokenizer_files(directory):
    """Tokenizer arguments from a Hugging Face (or kbert) directory.

    A keras-hub preset's files are read by `keras_hub_tokenizer_files`.
    Otherwise reads `vocab.txt` with `tokenizer_config.json` (`do_lower_case`, default
    True as in HF's BertTokenizer; `strip_accents`, default None = follow
    lowercase), or else `tokenizer.json` alone (vocabulary = `model.vocab`
    ordered by id; lowercase / strip_accents from its `BertNormalizer`).
    When both exist, `tokenizer.json`'s normalizer wins: it is what HF's fast
    tokenizer runs.

    Returns:
        `{"vocabulary": list of str, "lowercase": bool,
        "strip_accents": bool or None}`.

    Example:
    >>> arguments = read_tokenizer_files(minilm_dir)
    >>> arguments["vocabulary"][:2], arguments["lowercase"], arguments["strip_accents"]
    (['[PAD]', '[unused0]'], True, None)
    """
    directory = os.fspath(directory)
    if keras_hub_tokenizer_files.is_keras_hub_tokenizer(directory):
        return keras_hub_tokenizer_files.read_keras_hub_tokenizer(directory)
    vocab_path = os.path.join(directory, VOCABULARY_FILE)
    json_path = os.path.join(directory, TOKENIZER_JSON_FILE)
    config_path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    has_json = os.path.isfile(json_path)
    if not os.path.isfile(vocab_path):
        if not has_json:
            raise ValueError(
                f"{directory!r} holds neither {VOCABULARY_FILE} nor {TOKENIZER_JSON_FILE}."
            )
        result = _from_tokenizer_json(json_path)
        load_vocabulary(result["vocabulary"])  # checks it
        return result
    config = read_json(config_path) if os.path.isfile(config_path) else {}
    strip_accents = config.get("strip_accents")
    result = {
        "vocabulary": load_vocabulary(vocab_path),
        "lowercase": bool(config.get("do_lower_case", True)),
        "strip_accents": None if strip_accents is None else bool(strip_accents),
    }
    if has_json:
        normalizer = read_json(json_path).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            result["lowercase"] = bool(normalizer.get("lowercase", True))
            result["strip_accents"] = normalizer.get("strip_accents")
    return result


def write_tokenizer_files(directory, vocabulary, lowercase, strip_accents):
    """Write `vocab.txt` and an HF-style `tokenizer_config.json`.

    `transformers.AutoTokenizer.from_pretrained(directory)` loads the result
    as a `BertTokenizer(Fast)` with the same settings.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    save_vocabulary(vocabulary, os.path.join(directory, VOCABULARY_FILE))
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(lowercase),
        "strip_accents": strip_accents,
        "tokenize_chinese_chars": True,
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    with open(os.path.join(directory, TOKENIZER_CONFIG_FILE), "w") as file:
        json.dump(config, file, indent=2)


def set_model_max_length(directory, length):
    """Records the model's longest input (its positions) in `tokenizer_config.json`.

    `transformers` tokenizers truncate to `model_max_length`; without it
    (`truncation=True` in a `pipeline`) they let longer texts through to
    position embeddings that do not exist.

    Example:
    >>> write_tokenizer_files("out", ["[PAD]", "[UNK]"], True, None)
    >>> set_model_max_length("out", 512)
    >>> read_json("out/tokenizer_config.json")["model_max_length"]
    512
    """
    path = os.path.join(os.fspath(directory), TOKENIZER_CONFIG_FILE)
    config = read_json(path)
    config["model_max_length"] = int(length)
    with open(path, "w") as file:
        json.dump(config, file, indent=2)


def read_preprocessor_config(directory):
    """`preprocessor_config.json` as a dict; `{}` when the file is absent.

    Without it, `sequence_length` comes from `sentence_bert_config.json`'s
    `max_seq_length` (where sentence-transformers truncates: 256 for
    all-MiniLM-L6-v2), else from a `tokenizer.json` truncation `max_length`.
    """
    directory = os.fspath(directory)
    path = os.path.join(directory, PREPROCESSOR_CONFIG_FILE)
    if os.path.isfile(path):
        return read_json(path)
    if keras_hub_tokenizer_files.is_keras_hub_tokenizer(directory):
        return keras_hub_tokenizer_files.read_keras_hub_preprocessor(directory)
    sentence_bert = os.path.join(directory, "sentence_bert_config.json")
    if os.path.isfile(sentence_bert):
        length = read_json(sentence_bert).get("max_seq_length")
        if length:
            return {"sequence_length": int(length)}
    json_path = os.path.join(directory, TOKENIZER_JSON_FILE)
    if os.path.isfile(json_path):
        truncation = read_json(json_path).get("truncation") or {}
        if truncation.get("max_length"):
            return {"sequence_length": int(truncation["max_length"])}
    return {}


def write_preprocessor_config(directory, config):
    """Write `preprocessor_config.json` (kbert's packing settings)."""
    os.makedirs(os.fspath(directory), exist_ok=True)
    path = os.path.join(os.fspath(directory), PREPROCESSOR_CONFIG_FILE)
    with open(path, "w") as file:
        json.dump(config, file, indent=2)
