"""Masked-LM masking statistics on >= 100,000 tokens, static and dynamic.

The masking is TensorFlow ops (in data creation and in tf.data), the same on
every Keras backend: these tests run once, on the tensorflow pass.
"""

import numpy as np
import pytest

from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import pretraining_dataset
from kbert.pretraining.masking import MaskedLMMasker
from tests.pretraining.pretraining_helpers import (
    ToyTokenizer,
    only_on_tensorflow_run,
    synthetic_documents,
)

pytestmark = only_on_tensorflow_run()

VOCABULARY = ToyTokenizer().get_vocabulary()
PAD, CLS, SEP, MASK = (VOCABULARY.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]"))
CONTINUATION = np.array([t.startswith("##") for t in VOCABULARY])


def random_batch(batch=4096, length=128, seed=0):
    """[CLS] A [SEP] B [SEP] + padding; ~1/3 of words carry `##` pieces."""
    rng = np.random.default_rng(seed)
    words = np.arange(5, 405)
    pieces = np.flatnonzero(CONTINUATION)
    ids = rng.choice(words, size=(batch, length))
    follows = rng.random((batch, length)) < 0.3
    ids = np.where(follows, rng.choice(pieces, size=(batch, length)), ids)
    lengths = rng.integers(12, length + 1, batch)
    middles = rng.integers(3, lengths - 4)
    positions = np.arange(length)[None]
    ids[:, 0] = CLS
    ids[positions == middles[:, None]] = SEP
    ids[positions == (lengths - 1)[:, None]] = SEP
    padding_mask = positions < lengths[:, None]
    return np.where(padding_mask, ids, PAD).astype("int32"), padding_mask.astype("int32")


def check_statistics(token_ids, padding_mask, masked_ids, positions, labels, weights):
    """Shares over maskable tokens; returns the selection mask (batch, seq)."""
    real = weights > 0
    rows = np.nonzero(real)[0]
    selected = np.zeros(token_ids.shape, bool)
    selected[rows, positions[real]] = True
    assert real.sum() == selected.sum()  # no position chosen twice
    # Positions ascend; padding predictions point at 0 with label 0.
    assert (np.diff(np.where(real, positions, 10**6), axis=1) > 0)[real[:, 1:]].all()
    assert (positions[~real] == 0).all() and (labels[~real] == 0).all()
    np.testing.assert_array_equal(labels[real], token_ids[rows, positions[real]])
    # [CLS], [SEP] and [PAD] are never masked, nor changed.
    special = np.isin(token_ids, [CLS, SEP, PAD]) | (padding_mask == 0)
    assert not selected[special].any()
    np.testing.assert_array_equal(masked_ids[~selected], token_ids[~selected])

    maskable = ~special
    assert maskable.sum() >= 100_000
    share = selected.sum() / maskable.sum()
    assert abs(share - 0.15) <= 0.005, share
    new, old = masked_ids[selected], token_ids[selected]
    as_mask = np.mean(new == MASK)
    unchanged = np.mean(new == old)
    randomized = 1.0 - as_mask - unchanged
    assert abs(as_mask - 0.8) <= 0.01, as_mask
    assert abs(randomized - 0.1) <= 0.01, randomized
    assert abs(unchanged - 0.1) <= 0.01, unchanged
    assert not np.isin(new[new != old], [CLS, SEP, PAD]).any()  # random ids are real tokens
    return selected


@pytest.mark.parametrize("whole_word_masking", [False, True])
def test_masker_statistics(whole_word_masking):
    token_ids, padding_mask = random_batch()
    masker = MaskedLMMasker(
        VOCABULARY, max_predictions_per_seq=20, whole_word_masking=whole_word_masking
    )
    out = {k: v.numpy() for k, v in masker(token_ids, padding_mask, seed=(4, 2)).items()}
    assert (out["mask_weights"].sum(axis=1) <= 20).all()
    assert (out["mask_weights"].sum(axis=1) >= 1).all()
    selected = check_statistics(
        token_ids,
        padding_mask,
        out["token_ids"],
        out["mask_positions"],
        out["mask_ids"],
        out["mask_weights"],
    )
    # Whole words: a `##` piece is selected exactly when the piece before it is.
    piece = CONTINUATION[token_ids] & (padding_mask > 0)
    piece[:, 0] = False
    previous_real = np.roll(~np.isin(token_ids, [CLS, SEP, PAD]), 1, axis=1)
    joined = piece & previous_real
    same = selected[joined] == np.roll(selected, 1, axis=1)[joined]
    if whole_word_masking:
        assert same.all()
        assert selected[joined].sum() > 1000
    else:
        assert not same.all()  # pieces are masked on their own


def test_masks_are_deterministic_per_seed():
    token_ids, padding_mask = random_batch(batch=64)
    masker = MaskedLMMasker(VOCABULARY, max_predictions_per_seq=20)
    first = masker(token_ids, padding_mask, seed=(1, 1))["token_ids"].numpy()
    np.testing.assert_array_equal(
        first, masker(token_ids, padding_mask, seed=(1, 1))["token_ids"].numpy()
    )
    assert not np.array_equal(
        first, masker(token_ids, padding_mask, seed=(1, 2))["token_ids"].numpy()
    )


def test_masker_rejects_a_vocabulary_without_mask_token():
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        MaskedLMMasker(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])


def statistics_of_dataset(dataset):
    batches = [
        tuple({k: v.numpy() for k, v in part.items()} for part in b) for b in dataset
    ]
    x = {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}
    y = np.concatenate([b[1]["mlm_logits"] for b in batches])
    w = np.concatenate([b[2]["mlm_logits"] for b in batches])
    return x, y, w


@pytest.mark.parametrize("masking", ["static", "dynamic"])
def test_created_data_statistics(tmp_path, masking):
    metadata = create_pretraining_data(
        synthetic_documents(700, seed=2),
        tmp_path / "data",
        ToyTokenizer(),
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=2,
        masking=masking,
        seed=11,
        progress=False,
    )
    assert metadata["num_tokens"] >= 100_000
    if masking == "static":
        dataset = pretraining_dataset(tmp_path / "data", 512, training=False)
    else:  # one epoch of the training stream, masked on the fly
        steps = metadata["num_instances"] // 512
        dataset = pretraining_dataset(tmp_path / "data", 512, shuffle_buffer_size=1).take(
            steps
        )
    x, labels, weights = statistics_of_dataset(dataset)
    # Reconstruct the unmasked ids from the labels.
    original = x["token_ids"].copy()
    real = weights > 0
    rows = np.nonzero(real)[0]
    original[rows, x["mask_positions"][real]] = labels[real]
    check_statistics(
        original, x["padding_mask"], x["token_ids"], x["mask_positions"], labels, weights
    )
