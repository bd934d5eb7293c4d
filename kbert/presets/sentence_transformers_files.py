"""sentence-transformers module files: pooling and normalization, read and written.

A sentence-transformers directory is an HF BERT directory plus `modules.json`
(the pipeline: Transformer -> Pooling -> optional Normalize) and
`1_Pooling/config.json` (the pooling mode). `BertTextEmbedder` covers
pipelines of exactly those modules.
"""

import json
import os

from kbert.utils.text_files import read_json

MODULES = "modules.json"
POOLING_CONFIG = os.path.join("1_Pooling", "config.json")
SENTENCE_BERT_CONFIG = "sentence_bert_config.json"
POOLING_MODES = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
}
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")


def is_sentence_transformers(directory):
    """Whether a directory is a sentence-transformers model (has `modules.json`).

    Example:
    >>> is_sentence_transformers(minilm_dir)
    True
    """
    return os.path.isfile(os.path.join(directory, MODULES))


def embedder_arguments(directory):
    """`BertTextEmbedder` arguments (`pooling`, `normalize`) of a sentence-transformers dir.

    Returns `{}` for a plain HF directory. Refuses pipelines kbert cannot
    reproduce (extra Dense layers, sqrt-length or weighted pooling, ...).

    Example:
    >>> embedder_arguments(minilm_dir)
    {'normalize': True, 'pooling': 'mean'}
    """
    if not is_sentence_transformers(directory):
        return {}
    modules = read_json(os.path.join(directory, MODULES))
    kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
    unsupported = [kind for kind in kinds if kind not in SUPPORTED_MODULES]
    if unsupported:
        raise ValueError(
            f"{os.path.join(directory, MODULES)}: modules {unsupported} are not supported; "
            f"BertTextEmbedder reproduces {list(SUPPORTED_MODULES)} only."
        )
    arguments = {"normalize": "Normalize" in kinds}
    pooling_path = os.path.join(directory, POOLING_CONFIG)
    for module in modules:
        if module["type"].endswith("Pooling"):
            pooling_path = os.path.join(directory, module["path"], "config.json")
    if os.path.isfile(pooling_path):
        pooling = read_json(pooling_path)
        chosen = [mode for key, mode in POOLING_MODES.items() if pooling.get(key)]
        others = [
            key
            for key, value in pooling.items()
            if key.startswith("pooling_mode_") and value and key not in POOLING_MODES
        ]
        if len(chosen) != 1 or others:
            raise ValueError(
                f"{pooling_path}: BertTextEmbedder needs exactly one of "
                f"{sorted(POOLING_MODES)}; the file turns on "
                f"{[key for key, value in pooling.items() if value is True]}."
            )
        arguments["pooling"] = chosen[0]
    return arguments


def write_sentence_transformers_files(embedder, directory, max_seq_length):
    """Writes `modules.json`, `1_Pooling/config.json` and `sentence_bert_config.json`.

    Example:
    >>> embedder = kbert.BertTextEmbedder(backbone)
    >>> write_sentence_transformers_files(embedder, "out", max_seq_length=256)
    >>> sorted(os.listdir("out"))
    ['1_Pooling', '2_Normalize', 'modules.json', 'sentence_bert_config.json']
    """
    modules = [
        {
            "idx": 0,
            "name": "0",
            "path": "",
            "type": "sentence_transformers.models.Transformer",
        },
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    if embedder.normalize:
        modules.append(
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            }
        )
        os.makedirs(os.path.join(directory, "2_Normalize"), exist_ok=True)
    pooling = {"word_embedding_dimension": embedder.backbone.hidden_dim}
    pooling.update({key: mode == embedder.pooling for key, mode in POOLING_MODES.items()})
    pooling["pooling_mode_mean_sqrt_len_tokens"] = False
    os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
    for name, data in (
        (MODULES, modules),
        (POOLING_CONFIG, pooling),
        (SENTENCE_BERT_CONFIG, {"max_seq_length": max_seq_length, "do_lower_case": False}),
    ):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2)
