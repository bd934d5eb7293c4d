"""Length-bucketed batches: pad each batch to a few fixed lengths, not to the maximum.

Real text is short (a Rotten Tomatoes review is ~27 word pieces) and padding
every batch to the preprocessor's `sequence_length` (128) spends most of the
encoder's work on padding. Hugging Face users sort by length and pad each
batch to its longest row; XLA (TensorFlow, JAX) would then compile one
program per distinct length. kbert pads each batch to the next of a small,
fixed set of **bucket lengths** instead:

    8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512

(capped at, and always including, the preprocessor's `sequence_length`).
Steps of at most 1.5x keep the padding on a length-sorted batch under a
third (in practice ~10%), and all are multiples of 8 (vector width). With
`sequence_length=128` that is at most 8 lengths; with row counts padded to
powers of two for the last `predict` batch, XLA compiles a bounded handful of
shapes however many texts come in.

Training under XLA uses the coarser powers of two (16, 32, ..., 512): an
XLA training step takes several times longer to compile than to run on a
CPU, so for the few epochs of a fine-tune, fewer shapes beat less padding.
Eager training (torch, TensorFlow without XLA) compiles nothing per shape
and uses the fine set.

- Inference (`predict_batches`): rows sorted by length, so each batch holds
  texts of similar length; outputs go back in input order. torch's eager
  inference compiles nothing, so there each batch is padded to its longest
  row (buckets would cost it ~1.2x the tokens on real text).
- Training (`training_batches`): Hugging Face's `group_by_length`: a random
  permutation cut into mega-batches of 50 batches, each sorted by bucket
  (ties keep the random order), cut into batches, and the batch order shuffled.

Only numpy here: the model calls live in `kbert.models.bucketed_predict`.
"""

import numpy as np

from kbert.models.backbone import INPUT_NAMES

BUCKET_LENGTHS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
COARSE_BUCKET_LENGTHS = (16, 32, 64, 128, 256, 512)
DEFAULT_BATCH_SIZE = 32
# Hugging Face's `LengthGroupedSampler` default: 50 batches per mega-batch.
MEGABATCH_BATCHES = 50


def bucket_lengths(sequence_length, coarse=False):
    """The bucket lengths used for a preprocessor of `sequence_length`.

    Example:
    >>> bucket_lengths(128)
    (8, 16, 24, 32, 48, 64, 96, 128)
    >>> bucket_lengths(100), bucket_lengths(100, coarse=True)
    ((8, 16, 24, 32, 48, 64, 96, 100), (16, 32, 64, 100))
    """
    lengths = COARSE_BUCKET_LENGTHS if coarse else BUCKET_LENGTHS
    shorter = tuple(length for length in lengths if length < sequence_length)
    return shorter + (int(sequence_length),)


def bucket_length(length, sequence_length, coarse=False):
    """The smallest bucket length that holds `length` tokens.

    Example:
    >>> bucket_length(27, 128), bucket_length(33, 128), bucket_length(0, 128)
    (32, 48, 8)
    >>> bucket_length(33, 128, coarse=True)
    64
    """
    for bucket in bucket_lengths(sequence_length, coarse):
        if length <= bucket:
            return bucket
    return int(sequence_length)


def row_bucket(rows, batch_size):
    """Rows a short batch is padded to: the next power of two, at most `batch_size`.

    Example:
    >>> [row_bucket(n, 32) for n in (1, 3, 5, 32)]
    [1, 4, 8, 32]
    """
    return min(1 << max(rows - 1, 0).bit_length(), batch_size)


def token_lengths(features):
    """Real tokens per example, from `padding_mask` (the longest choice when
    examples hold several sequences, as multiple choice does).

    Example:
    >>> token_lengths({"padding_mask": np.array([[1, 1, 0], [1, 1, 1]])})
    array([2, 3])
    """
    lengths = np.asarray(features["padding_mask"]).astype(bool).sum(axis=-1)
    if lengths.ndim == 1:
        return lengths
    per_example = int(np.prod(lengths.shape[1:]))  # -1 fails on zero examples
    return lengths.reshape(lengths.shape[0], per_example).max(axis=-1, initial=0)


def trim(features, length, names):
    """`features` with the arrays in `names` cut to `length` along the last axis."""
    return {
        name: value[..., :length] if name in names else value
        for name, value in features.items()
    }


def take_rows(value, index):
    """Rows `index` of an array, or of every array in a dict/tuple/list."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {name: take_rows(part, index) for name, part in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(take_rows(part, index) for part in value)
    return np.asarray(value)[index]


def pad_rows(value, rows):
    """An array (or a dict/tuple/list of them) padded with zero rows to `rows`."""
    if isinstance(value, dict):
        return {name: pad_rows(part, rows) for name, part in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(pad_rows(part, rows) for part in value)
    value = np.asarray(value)
    extra = rows - value.shape[0]
    if extra <= 0:
        return value
    return np.concatenate([value, np.zeros((extra,) + value.shape[1:], value.dtype)])


def predict_batches(features, batch_size, sequence_length, fixed_shapes=True):
    """`(row_index, padded_features)` per batch, longest texts first.

    Each batch is cut to its bucket length; the last one is padded with
    all-padding rows to a power of two (`row_bucket`), so repeated calls
    reuse the same compiled shapes. With `fixed_shapes=False` (for a model
    that compiles nothing per shape: torch's eager inference) each batch is
    cut to its longest row instead and the last keeps its rows, as Hugging
    Face's dynamic padding does. `row_index` says which input rows the
    first `len(row_index)` output rows belong to.

    Example:
    >>> mask = np.array([[1] * 3 + [0] * 13, [1] * 12 + [0] * 4, [1] * 2 + [0] * 14])
    >>> [(index.tolist(), batch["padding_mask"].shape) for index, batch
    ...  in predict_batches({"padding_mask": mask}, 2, 16)]
    [([1, 0], (2, 16)), ([2], (1, 8))]
    >>> [batch["padding_mask"].shape for _, batch
    ...  in predict_batches({"padding_mask": mask}, 2, 16, fixed_shapes=False)]
    [(2, 12), (1, 2)]
    """
    # Only the token inputs have a sequence axis (not e.g. `mask_positions`).
    names = [name for name in INPUT_NAMES if name in features]
    lengths = token_lengths(features)
    order = np.argsort(-lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        longest = int(lengths[index].max())
        if fixed_shapes:
            batch = trim(
                take_rows(features, index), bucket_length(longest, sequence_length), names
            )
            yield index, pad_rows(batch, row_bucket(len(index), batch_size))
        else:  # at least one position: a batch of empty texts still has a shape
            yield index, trim(take_rows(features, index), max(longest, 1), names)


def training_batches(lengths, batch_size, sequence_length, rng=None, coarse=False):
    """Row indices of each batch, grouped by length as `group_by_length` does.

    With `rng` (a `numpy.random.RandomState`), the rows are permuted, cut
    into mega-batches of `MEGABATCH_BATCHES` batches, each mega-batch sorted
    by bucket length (a stable sort: rows of one bucket stay in random
    order), cut into batches, and the batches shuffled. Without `rng` the
    rows keep their order (no shuffling) and only the sort within each
    mega-batch happens.

    Example:
    >>> lengths = np.array([30, 5, 29, 6, 31, 4])
    >>> [index.tolist() for index in training_batches(lengths, 2, 128)]
    [[0, 2], [4, 1], [3, 5]]
    """
    lengths = np.asarray(lengths)
    order = np.arange(len(lengths)) if rng is None else rng.permutation(len(lengths))
    buckets = np.array([bucket_length(int(n), sequence_length, coarse) for n in lengths])
    step = MEGABATCH_BATCHES * batch_size
    batches = []
    for start in range(0, len(order), step):
        megabatch = order[start : start + step]
        megabatch = megabatch[np.argsort(-buckets[megabatch], kind="stable")]
        batches += [
            megabatch[i : i + batch_size] for i in range(0, len(megabatch), batch_size)
        ]
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def pad_to_length(value, axis, length):
    """`value` padded with zeros along `axis` up to `length` (outputs of a
    shorter bucket, back to the preprocessor's `sequence_length`)."""
    value = np.asarray(value)
    missing = length - value.shape[axis]
    if missing <= 0:
        return value
    widths = [(0, 0)] * value.ndim
    widths[axis] = (0, missing)
    return np.pad(value, widths)
