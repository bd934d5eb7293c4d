"""Masked-LM masking in TensorFlow ops, for static data creation and tf.data.

Semantics of `create_masked_lm_predictions` in the original BERT
`create_pretraining_data.py`: `[CLS]`, `[SEP]` (and padding) are never
chosen; about `masked_lm_prob` of the remaining tokens are chosen, at most
`max_predictions_per_seq` and at least one; each chosen token becomes
`[MASK]` 80% of the time, a random token 10% and stays unchanged 10%. With
whole-word masking, a word and all its `##` pieces are chosen together
(greedily, in random order, skipping words that would overshoot the count),
the 80/10/10 choice still made per piece.

Two deliberate differences: the per-sequence count rounds stochastically
(`floor(n * p)` plus one with probability equal to the fraction) on the
maskable tokens, so the expected share is exactly `masked_lm_prob` at every
sequence length; and random replacements are drawn from the non-special
tokens instead of the whole vocabulary.
"""

import numpy as np

UNMASKABLE_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocabulary(vocabulary):
    """A vocabulary as a list of tokens, from a list or a `vocab.txt` path.

    Example:
    >>> load_vocabulary(vocab_file)[:3]
    ['[PAD]', '[UNK]', '[CLS]']
    """
    if isinstance(vocabulary, str | bytes) or hasattr(vocabulary, "__fspath__"):
        with open(vocabulary, encoding="utf-8") as file:
            tokens = [line.rstrip() for line in file.read().splitlines()]
        while tokens and not tokens[-1]:
            tokens.pop()
        return tokens
    return [str(token) for token in vocabulary]


class MaskedLMMasker:
    """Chooses and replaces tokens for masked-LM training, deterministically.

    Call it on a batch of `token_ids` (batch, seq) and `padding_mask` with a
    stateless `seed` (two integers): the same seed gives the same masks on
    every run and machine, so data can be re-created or resumed exactly.
    Returns a dict of `token_ids` (masked), `mask_positions` (batch, P)
    int32 in ascending order, `mask_ids` (batch, P) int32, the original ids,
    and `mask_weights` (batch, P) float32, 1 for real predictions and 0 for
    padding, where P = `max_predictions_per_seq`.

    Example:
    >>> masker = MaskedLMMasker(vocabulary, max_predictions_per_seq=3)
    >>> token_ids = np.array([[2, 21, 22, 23, 3, 0], [2, 16, 17, 3, 0, 0]])
    >>> out = masker(token_ids, (token_ids > 0).astype("int32"), seed=(1, 0))
    >>> tuple(out["mask_positions"].shape)
    (2, 3)
    """

    def __init__(
        self,
        vocabulary,
        masked_lm_prob=0.15,
        max_predictions_per_seq=20,
        whole_word_masking=False,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        mask_token="[MASK]",
        unmaskable_tokens=UNMASKABLE_TOKENS,
    ):
        self.vocabulary = load_vocabulary(vocabulary)
        if mask_token not in self.vocabulary:
            raise ValueError(
                f"The vocabulary ({len(self.vocabulary)} tokens) has no mask "
                f"token {mask_token!r}; pass `mask_token=` with the one it uses."
            )
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1); got {masked_lm_prob}.")
        if mask_token_rate + random_token_rate > 1.0:
            raise ValueError(
                "mask_token_rate + random_token_rate must be at most 1; got "
                f"{mask_token_rate} + {random_token_rate}."
            )
        self.masked_lm_prob = float(masked_lm_prob)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.whole_word_masking = bool(whole_word_masking)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.mask_token_id = self.vocabulary.index(mask_token)
        unmaskable = set(unmaskable_tokens)
        self._unmaskable = np.array([t in unmaskable for t in self.vocabulary])
        self._continuation = np.array([t.startswith("##") for t in self.vocabulary])
        special = set(SPECIAL_TOKENS) | unmaskable
        self._random_ids = np.array(
            [i for i, t in enumerate(self.vocabulary) if t not in special], "int32"
        )

    def get_config(self):
        return {
            "masked_lm_prob": self.masked_lm_prob,
            "max_predictions_per_seq": self.max_predictions_per_seq,
            "whole_word_masking": self.whole_word_masking,
            "mask_token_rate": self.mask_token_rate,
            "random_token_rate": self.random_token_rate,
        }

    def __call__(self, token_ids, padding_mask, seed):
        import tensorflow as tf  # lazy: TF only when pretraining data is created or read

        token_ids = tf.cast(token_ids, tf.int32)
        batch_size = tf.shape(token_ids)[0]
        length = tf.shape(token_ids)[1]
        num_predictions = self.max_predictions_per_seq
        seeds = tf.random.experimental.stateless_split(
            tf.cast(tf.convert_to_tensor(seed), tf.int64), num=5
        )

        maskable = tf.logical_and(
            tf.cast(padding_mask, tf.bool),
            tf.logical_not(tf.gather(tf.constant(self._unmaskable), token_ids)),
        )
        num_maskable = tf.reduce_sum(tf.cast(maskable, tf.int32), axis=1)
        expected = tf.cast(num_maskable, tf.float32) * self.masked_lm_prob
        round_up = tf.random.stateless_uniform([batch_size], seeds[0]) < (
            expected - tf.floor(expected)
        )
        count = tf.cast(tf.floor(expected), tf.int32) + tf.cast(round_up, tf.int32)
        count = tf.minimum(tf.maximum(count, 1), num_predictions)
        count = tf.minimum(count, num_maskable)

        # Group tokens into words: every maskable token is a word, unless
        # whole-word masking joins `##` pieces to the word before them.
        starts = maskable
        if self.whole_word_masking:
            continuation = tf.gather(tf.constant(self._continuation), token_ids)
            previous_maskable = tf.pad(maskable[:, :-1], [[0, 0], [1, 0]])
            starts = tf.logical_and(
                maskable,
                tf.logical_not(tf.logical_and(continuation, previous_maskable)),
            )
        word_index = tf.maximum(tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, 0)
        num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
        slots = tf.range(length)[None, :]
        word_scores = tf.where(
            slots < num_words[:, None],
            tf.random.stateless_uniform([batch_size, length], seeds[1]),
            -1.0,
        )
        order = tf.argsort(word_scores, axis=1, direction="DESCENDING")
        rank = tf.argsort(order, axis=1)
        if self.whole_word_masking:
            chosen_sorted = _greedy_words(_word_lengths(maskable, word_index), order, count)
            chosen_word = tf.gather(chosen_sorted, rank, batch_dims=1)
        else:
            chosen_word = rank < count[:, None]
        selected = tf.logical_and(
            maskable, tf.gather(chosen_word, word_index, batch_dims=1)
        )

        # The selected positions in ascending order, padded to P with `length`.
        key = tf.where(selected, slots, length)
        key = tf.pad(
            key,
            [[0, 0], [0, tf.maximum(num_predictions - length, 0)]],
            constant_values=length,
        )
        positions = -tf.math.top_k(-key, k=num_predictions).values
        weights = positions < length
        positions = tf.where(weights, positions, 0)
        original = tf.gather(token_ids, positions, batch_dims=1)
        mask_ids = tf.where(weights, original, 0)

        choice = tf.random.stateless_uniform([batch_size, num_predictions], seeds[2])
        random_index = tf.random.stateless_uniform(
            [batch_size, num_predictions],
            seeds[3],
            maxval=len(self._random_ids),
            dtype=tf.int32,
        )
        random_ids = tf.gather(tf.constant(self._random_ids), random_index)
        replacement = tf.where(
            choice < self.mask_token_rate,
            self.mask_token_id,
            tf.where(
                choice < self.mask_token_rate + self.random_token_rate,
                random_ids,
                original,
            ),
        )
        # Scatter by comparison: padded predictions all point at position 0.
        hit = tf.logical_and(
            tf.equal(positions[:, :, None], slots[:, None, :]), weights[:, :, None]
        )
        replaced = tf.reduce_any(hit, axis=1)
        new_ids = tf.reduce_sum(tf.where(hit, replacement[:, :, None], 0), axis=1)
        return {
            "token_ids": tf.where(replaced, new_ids, token_ids),
            "mask_positions": positions,
            "mask_ids": mask_ids,
            "mask_weights": tf.cast(weights, tf.float32),
        }


def _word_lengths(maskable, word_index):
    """(batch, seq): number of maskable pieces of each word slot."""
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    batch_size = tf.shape(word_index)[0]
    length = tf.shape(word_index)[1]
    flat = word_index + tf.range(batch_size)[:, None] * length
    flat = tf.where(maskable, flat, batch_size * length)  # a discarded bucket
    flat = tf.reshape(flat, [-1])
    counts = tf.math.unsorted_segment_sum(tf.ones_like(flat), flat, batch_size * length + 1)
    return tf.reshape(counts[:-1], [batch_size, length])


def _greedy_words(word_lengths, order, count):
    """Takes words in `order` while they fit in `count`, skipping overshooters."""
    import tensorflow as tf  # lazy: TF only when pretraining data is created or read

    lengths = tf.transpose(tf.gather(word_lengths, order, batch_dims=1))

    def step(state, word_length):
        total, _ = state
        take = tf.logical_and(word_length > 0, total + word_length <= count)
        return total + tf.where(take, word_length, 0), take

    _, taken = tf.scan(step, lengths, initializer=(tf.zeros_like(count), count > 0))
    return tf.transpose(taken)
