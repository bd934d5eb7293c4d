"""A synthetic corpus and a toy WordPiece-like tokenizer for pretraining tests.

Words `w0`..`wN` belong to topics (one topic per document, so next-sentence
prediction is learnable); every word whose index is a multiple of 5 is
written as several pieces (`w5` -> `w5 ##p0 ##p1`), for whole-word masking.
"""

import random

import keras
import numpy as np

from tests.test_case import tiny_backbone

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
NUM_WORDS = 400
NUM_PIECES = 8


def toy_vocabulary():
    return (
        SPECIAL
        + [f"w{i}" for i in range(NUM_WORDS)]
        + [f"##p{i}" for i in range(NUM_PIECES)]
    )


class ToyTokenizer:
    """Whitespace words -> ids; words `w{5k}` get 1-2 continuation pieces."""

    def __init__(self):
        self.vocabulary = toy_vocabulary()
        self.index = {token: i for i, token in enumerate(self.vocabulary)}

    def get_vocabulary(self):
        return list(self.vocabulary)

    def __call__(self, texts):
        out = []
        for text in texts:
            ids = []
            for word in text.split():
                ids.append(self.index.get(word, 1))
                number = int(word[1:]) if word[1:].isdigit() else 1
                if number % 5 == 0:
                    ids += [self.index[f"##p{j}"] for j in range(1 + number % 2)]
            out.append(ids)
        return out


def synthetic_documents(num_documents, seed=0, num_topics=8):
    """Documents (lists of sentences); sentences of 3-15 words from a topic."""
    return list(iter_synthetic_documents(num_documents, seed, num_topics))


def write_corpus(path, num_documents, seed=4):
    """A corpus file of `synthetic_documents`: a sentence (ending " .") a
    line, a blank line after each document, as `kbert pretrain --corpus`
    reads it. Returns `path` as a string."""
    with open(path, "w") as file:
        for document in synthetic_documents(num_documents, seed=seed):
            file.writelines(sentence + " .\n" for sentence in document)
            file.write("\n")
    return str(path)


def iter_synthetic_documents(num_documents, seed=0, num_topics=8):
    """`synthetic_documents`, one at a time."""
    rng = random.Random(seed)
    words_per_topic = NUM_WORDS // num_topics
    for d in range(num_documents):
        topic = d % num_topics
        pool = [f"w{topic * words_per_topic + i}" for i in range(words_per_topic)]
        yield [
            " ".join(rng.choice(pool) for _ in range(rng.randint(3, 15)))
            for _ in range(rng.randint(1, 12))
        ]


def tiny_pretrainer(seed=1, dropout=0.1, dtype=None, jit_compile=None, **optimizer_kwargs):
    """A 1-layer BertPretrainer for the toy vocabulary, compiled for pretraining.

    By default compiled (XLA) on JAX only and eager on TensorFlow: at this
    size TensorFlow traces or compiles for seconds per model, longer than a
    test's steps take, while eager JAX compiles every op on its own.
    """
    run_eagerly = jit_compile is None and keras.backend.backend() == "tensorflow"
    if jit_compile is None:
        jit_compile = keras.backend.backend() == "jax"
    import kbert
    from kbert.optimization.optimizers import bert_optimizer

    keras.utils.set_random_seed(seed)
    backbone = tiny_backbone(
        vocabulary_size=len(toy_vocabulary()),
        num_layers=1,
        max_sequence_length=32,
        dropout=dropout,
        attention_dropout=dropout,
        dtype=dtype,
    )
    model = kbert.BertPretrainer(backbone, compile=False)
    options = dict(total_steps=20, learning_rate=1e-3, warmup_steps=2)
    options.update(optimizer_kwargs)
    model.compile(
        optimizer=bert_optimizer(**options),
        jit_compile=jit_compile,
        run_eagerly=run_eagerly,
    )
    return model


def weights_of(model):
    return [keras.ops.convert_to_numpy(v).copy() for v in model.weights]


def only_on_tensorflow_run():
    """Skip marker for tests with no backend-specific code (run them once)."""
    import pytest

    return pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="backend-independent (pure Python / tf.data); runs on the tensorflow pass",
    )


def max_abs_difference(a, b):
    return max(float(np.max(np.abs(x - y))) if x.size else 0.0 for x, y in zip(a, b))


def share_jax_compilations():
    """Tests build many same-shaped models; on JAX, compile each step once.

    A persistent compilation cache in a temporary directory serves the
    identical XLA programs of later models (seconds each on this CPU).
    """
    if keras.backend.backend() != "jax":
        return
    import atexit
    import shutil
    import tempfile

    import jax

    if jax.config.jax_compilation_cache_dir:
        return
    directory = tempfile.mkdtemp(prefix="kbert-jax-cache-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


share_jax_compilations()
