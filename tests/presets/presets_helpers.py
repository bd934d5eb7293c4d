"""Shared helpers for the checkpoint tests: random HF models, inputs, reports."""

import json
import os

import keras
import numpy as np

# Deliberately unusual: relu, 16 segments, eps 1e-7, 3 heads, hidden 48.
UNUSUAL_CONFIG = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=3,
    intermediate_size=64,
    hidden_act="relu",
    type_vocab_size=16,
    layer_norm_eps=1e-7,
    max_position_embeddings=40,
)
# Max-abs-diff per unit of the reference's largest magnitude: float32 rounding
# grows with the values (MiniLM's hidden states reach 10.5), so a fixed 1e-4
# would hold for one summation order and fail for another (JAX, 1.07e-4).
TOLERANCE = 1e-4
# Real sentences of mixed lengths, for the packaged real checkpoints.
SENTENCES = [
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Hi!",
    "Sentence embeddings compare meaning; padding must not change them at all.",
]


def backend():
    return keras.backend.backend()


def report(what, diff):
    """Prints a parity figure (read them with `pytest -s`)."""
    print(f"\n[parity {backend()}] {what}: max-abs-diff {diff:.3e}")


def max_abs_diff(actual, expected):
    actual = np.asarray(keras.ops.convert_to_numpy(actual), dtype="float64")
    expected = np.asarray(expected, dtype="float64")
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return float(np.max(np.abs(actual - expected)))


def assert_parity(what, actual, expected, tolerance=TOLERANCE):
    diff = max_abs_diff(actual, expected)
    report(what, diff)
    scale = max(1.0, float(np.max(np.abs(np.asarray(expected, dtype="float64")))))
    bound = tolerance * scale
    assert diff <= bound, (
        f"{what}: max-abs-diff {diff} > {tolerance} x max|expected| {scale:.3g}"
    )
    return diff


def random_hf_model(class_name, seed=0, **config):
    """A transformers BERT model with every parameter random (not HF's init),
    so a swapped gamma/beta or an untransposed bias cannot go unnoticed."""
    import torch
    import transformers

    torch.manual_seed(seed)
    hf_config = transformers.BertConfig(**{**UNUSUAL_CONFIG, **config})
    model = getattr(transformers, class_name)(hf_config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(0.0, 0.2)
            if "LayerNorm.weight" in name:
                parameter.add_(1.0)
    return model.eval()


def save_hf_model(model, directory):
    model.save_pretrained(directory)
    return str(directory)


def token_batch(vocab_size, batch=3, length=12, num_segments=2, seed=0, extra_dims=()):
    """Right-padded ids of mixed lengths, with segment ids; numpy int32."""
    rng = np.random.default_rng(seed)
    shape = (batch,) + tuple(extra_dims) + (length,)
    lengths = rng.integers(3, length + 1, shape[:-1])
    lengths.reshape(-1)[0] = length
    mask = (np.arange(length) < lengths[..., None]).astype("int32")
    ids = rng.integers(1, vocab_size, shape).astype("int32") * mask
    segments = rng.integers(0, num_segments, shape).astype("int32") * mask
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def hf_inputs(batch):
    import torch

    return {
        "input_ids": torch.tensor(batch["token_ids"], dtype=torch.long),
        "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(batch["padding_mask"], dtype=torch.long),
    }


def hf_run(model, batch, **kwargs):
    import torch

    with torch.no_grad():
        return model(**hf_inputs(batch), **kwargs)


def numpy_of(tensor):
    return tensor.detach().cpu().numpy()


def read_safetensors(path):
    from safetensors.numpy import load_file

    return load_file(path)


def write_safetensors(tensors, path):
    from safetensors.numpy import save_file

    save_file(tensors, path, metadata={"format": "pt"})


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file)


def read_json(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def google_name(hf_name):
    """An HF BERT weight name in the original TF checkpoint spelling.

    Written independently of kbert's weight maps, from google-research/bert.
    """
    name = hf_name
    for old, new in (
        ("cls.predictions.bias", "cls/predictions/output_bias"),
        ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights"),
        ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias"),
        ("classifier.weight", "output_weights"),
        ("classifier.bias", "output_bias"),
        ("qa_outputs.weight", "cls/squad/output_weights"),
        ("qa_outputs.bias", "cls/squad/output_bias"),
        ("LayerNorm.weight", "LayerNorm.gamma"),
        ("LayerNorm.bias", "LayerNorm.beta"),
        ("embeddings.weight", "embeddings"),
        (".weight", ".kernel"),
    ):
        name = name.replace(old, new)
    name = name.replace(".", "/")
    parts = name.split("/")
    for i, part in enumerate(parts[:-1]):
        if part == "layer" and parts[i + 1].isdigit():
            parts[i : i + 2] = [f"layer_{parts[i + 1]}", ""]
    return "/".join(p for p in parts if p)


def write_google_checkpoint(directory, hf_model, extra=None):
    """An original-format directory (bert_config.json + TF1 checkpoint) holding
    `hf_model`'s weights under the google-research/bert names."""
    import tensorflow as tf

    os.makedirs(directory, exist_ok=True)
    variables = {}
    for name, tensor in hf_model.state_dict().items():
        if name.endswith("position_ids") or name.endswith("decoder.weight"):
            continue
        if name.endswith("decoder.bias"):
            continue
        value = numpy_of(tensor)
        google = google_name(name)
        is_linear = google.endswith("/kernel")
        variables[google] = value.T if is_linear else value
    variables.update(extra or {})
    with tf.Graph().as_default():
        tf_variables = [tf.compat.v1.Variable(v, name=n) for n, v in variables.items()]
        saver = tf.compat.v1.train.Saver(tf_variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(
                session, os.path.join(directory, "bert_model.ckpt"), write_meta_graph=False
            )
    config = hf_model.config
    write_json(
        os.path.join(directory, "bert_config.json"),
        {
            key: getattr(config, key)
            for key in (
                "attention_probs_dropout_prob",
                "hidden_act",
                "hidden_dropout_prob",
                "hidden_size",
                "initializer_range",
                "intermediate_size",
                "max_position_embeddings",
                "num_attention_heads",
                "num_hidden_layers",
                "type_vocab_size",
                "vocab_size",
            )
        },
    )
    return str(directory), variables


def has_preprocessing():
    """Whether kbert.preprocessing provides BertPreprocessor (from_preset attaches one)."""
    import importlib.util

    try:
        return importlib.util.find_spec("kbert.preprocessing.preprocessor") is not None
    except ModuleNotFoundError:
        return False
