"""Tiny models with a real tokenizer, for the exporter tests."""

import keras
import numpy as np
import pytest

from kbert.export.spec import keras_outputs  # noqa: F401 - the tests' reference
from tests.preprocessing.corpus import MINILM_VOCABULARY

WORDS = (
    "the a an is was it this that film movie good bad great not very and of to in "
    "story acting plot fun boring but with for as so be by his her all its"
).split()
SEQUENCE_LENGTH = 24


def vocabulary():
    """Special tokens, a few words, punctuation, and every letter as a piece."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokens += list(".,!?'-:;()\"")
    for letter in "abcdefghijklmnopqrstuvwxyz0123456789":
        tokens += [letter, "##" + letter]
    return list(dict.fromkeys(tokens))


def preprocessor(normalization="exact", sequence_length=SEQUENCE_LENGTH):
    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    tokenizer = BertTokenizer(vocabulary(), normalization=normalization)
    return BertPreprocessor(tokenizer, sequence_length=sequence_length)


def tiny_model(
    cls_name="BertClassifier", hidden_dim=16, seed=0, max_sequence_length=32, **kwargs
):
    """A two-layer model whose outputs vary visibly from text to text."""
    import kbert

    keras.utils.set_random_seed(seed)
    backbone = kbert.BertBackbone(
        vocabulary_size=len(vocabulary()),
        num_layers=2,
        num_heads=2,
        hidden_dim=hidden_dim,
        intermediate_dim=2 * hidden_dim,
        max_sequence_length=max_sequence_length,
        initializer_range=0.3,
    )
    kwargs.setdefault("preprocessor", preprocessor())
    return getattr(kbert, cls_name)(backbone, **kwargs)


def features(model, texts, preprocessor=None):
    preprocessor = preprocessor or model.preprocessor
    return {k: np.asarray(v) for k, v in preprocessor.preprocess(texts).items()}


def near_ties(model):
    """Moves a two-class model's decision boundary to the median held-out
    review, so that any quantization noise flips some predictions."""
    from kbert.export.agreement import agreement_features
    from kbert.export.spec import export_spec

    features, _ = agreement_features(model, export_spec(model))
    logits = keras_outputs(model, features)["logits"]
    shift = float(np.median(logits[:, 1] - logits[:, 0]))
    bias = np.asarray(keras.ops.convert_to_numpy(model.classifier.bias))
    model.classifier.bias.assign(bias - np.array([0.0, shift], "float32"))


def predictions_by_hand(model, logits_of):
    """The documented agreement measure, written out: the held-out reviews
    sorted by length, batches of 32 cut to their longest review; returns the
    artifact's (`logits_of(batch)`) and Keras' argmax classes, review for
    review (their mean equality is the agreement)."""
    from kbert.export.agreement import agreement_features
    from kbert.export.spec import export_spec

    features, _ = agreement_features(model, export_spec(model))
    lengths = features["padding_mask"].sum(-1)
    order = np.argsort(lengths, kind="stable")
    got, want = [], []
    for start in range(0, len(order), 32):
        rows = order[start : start + 32]
        batch = {k: v[rows, : max(2, lengths[rows].max())] for k, v in features.items()}
        got.append(np.argmax(logits_of(batch), -1))
        want.append(np.argmax(keras_outputs(model, batch)["logits"], -1))
    return np.concatenate(got), np.concatenate(want)


def minilm_vocabulary_model(
    cls_name="BertClassifier", sequence_length=64, seed=0, **kwargs
):
    """A tiny random model on MiniLM's real vocabulary: its tokenizer is the
    fine-tuned review classifier's (so an exporter's tokenization checks on
    real reviews hold as they do for it), its weights a few thousand times
    fewer (the export of each Keras backend, checked in seconds)."""
    import kbert
    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    tokenizer = BertTokenizer(MINILM_VOCABULARY)
    kwargs.setdefault("preprocessor", BertPreprocessor(tokenizer, sequence_length))
    keras.utils.set_random_seed(seed)
    backbone = kbert.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=sequence_length,
        initializer_range=0.3,
    )
    return getattr(kbert, cls_name)(backbone, **kwargs)


# The fine-tuned classifier's string export (about a minute) is a property of
# the model, not of the backend that exports it: checked once, in the PyTorch
# run (whose own export it checks); the other runs check their exports on a
# `minilm_vocabulary_model`.
REAL_WEIGHTS_ONCE = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the fine-tuned classifier's string export (a minute) is checked once, "
    "in the PyTorch run; the other backends export a tiny MiniLM-vocabulary model",
)
OTHER_BACKENDS = pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="the PyTorch run exports the fine-tuned classifier (REAL_WEIGHTS_ONCE)",
)
