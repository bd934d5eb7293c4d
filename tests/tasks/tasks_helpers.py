"""Shared by the task pipeline tests: a hand-made vocabulary, tiny random
Hugging Face models saved with their tokenizer, and parity reporting."""

import os

import keras
import numpy as np

# Whole words and pieces the test sentences use; "jumps" -> jump ##s,
# "unseen" -> [UNK].
VOCABULARY = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the a an is of in on and to what who where "
    "which capital city france paris london river fox dog jump ##s ##ed ##ing big "
    "small red blue , . ? ada love ##lace wrote notes about engine babbage built "
    "sky color green loud grass cat sat mat"
).split()
TOLERANCE = 1e-4
TINY_HF_CONFIG = dict(
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=64,
    hidden_act="gelu",
)


def backend():
    return keras.backend.backend()


def report(what, value):
    print(f"\n[parity {backend()}] {what}: {value}")


def quick_jit():
    """`jit_compile` for the training tests: XLA's compile time dominates tiny
    models on TensorFlow's CPU, so it is off there (predict in the parity
    tests and the examples keep the default); JAX keeps jit, torch has none.
    """
    return False if backend() == "tensorflow" else "auto"


def write_vocabulary(directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as file:
        file.write("\n".join(VOCABULARY) + "\n")
    return path


def hf_tokenizer(directory):
    import transformers

    return transformers.BertTokenizerFast(
        write_vocabulary(directory), do_lower_case=True, model_max_length=64
    )


def random_hf_model(class_name, seed=0, **config):
    """A tiny transformers BERT with every parameter random (not HF's init)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    hf_config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), **{**TINY_HF_CONFIG, **config}
    )
    model = getattr(transformers, class_name)(hf_config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(0.0, 0.3)
            if "LayerNorm.weight" in name:
                parameter.add_(1.0)
    return model.eval()


def save_hf(model, tokenizer, directory):
    """`save_pretrained` of both, as a model hub directory holds them."""
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def max_abs_diff(actual, expected):
    actual = np.asarray(keras.ops.convert_to_numpy(actual), dtype="float64")
    expected = np.asarray(expected, dtype="float64")
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return float(np.max(np.abs(actual - expected)))


def hf_logits(model, encoded, **outputs):
    import torch

    with torch.no_grad():
        result = model(
            **{k: torch.as_tensor(np.asarray(v)) for k, v in encoded.items()}, **outputs
        )
    return result
