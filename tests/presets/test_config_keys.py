"""A checkpoint config that lacks the model's sizes is refused, by name."""

import json
import os

import pytest

import kbert
from tests.test_case import tiny_backbone

HF_SIZES = dict(
    vocab_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    hidden_size=16,
    intermediate_size=32,
    max_position_embeddings=24,
    type_vocab_size=2,
)


def write_config(directory, name, config):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as file:
        json.dump(config, file)
    return os.path.join(directory, name)


# The config file of the HF and of the Google layout.
LAYOUTS = ["config.json", "bert_config.json"]


@pytest.mark.parametrize("name", LAYOUTS)
def test_missing_size_keys_are_named_with_the_file(tmp_path, name):
    config = {k: v for k, v in HF_SIZES.items() if k not in ("hidden_size", "vocab_size")}
    path = write_config(tmp_path, name, {**config, "hidden_act": "gelu"})
    with pytest.raises(ValueError) as error:
        kbert.BertBackbone.from_preset(str(tmp_path))
    message = str(error.value)
    assert path in message and "['vocab_size', 'hidden_size']" in message, message


@pytest.mark.parametrize("name", LAYOUTS)
def test_empty_config_says_it_is_empty(tmp_path, name):
    path = write_config(tmp_path, name, {})
    with pytest.raises(ValueError, match="the config is empty") as error:
        kbert.BertBackbone.from_preset(str(tmp_path))
    assert path in str(error.value) and "hidden_size" in str(error.value)


def test_kbert_preset_without_sizes(tmp_path):
    tiny_backbone().save_to_preset(str(tmp_path))
    path = str(tmp_path / "backbone.json")
    with open(path) as file:
        stored = json.load(file)
    del stored["config"]["num_layers"], stored["config"]["vocabulary_size"]
    write_config(tmp_path, "backbone.json", stored)
    with pytest.raises(ValueError) as error:
        kbert.BertBackbone.from_preset(str(tmp_path))
    message = str(error.value)
    assert path in message and "['vocabulary_size', 'num_layers']" in message, message
    write_config(tmp_path, "backbone.json", {})
    with pytest.raises(ValueError, match="the config is empty"):
        kbert.BertBackbone.from_preset(str(tmp_path))
    # The complete config still loads.
    write_config(
        tmp_path, "backbone.json", {**stored, "config": tiny_backbone().get_config()}
    )
    assert kbert.BertBackbone.from_preset(str(tmp_path)).num_layers == 2
