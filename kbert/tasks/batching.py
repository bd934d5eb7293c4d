"""Row padding so that repeated predictions reuse a few compiled shapes.

JAX and XLA compile once per input shape: predicting 3 windows, then 5,
then 7 would compile three times. Padding the row count to a power of two
(below the batch size) or to a multiple of the batch size (above) bounds the
shapes to a handful.
"""

import numpy as np

DEFAULT_BATCH_SIZE = 32


def bucket_size(num_rows, batch_size=DEFAULT_BATCH_SIZE):
    """The padded row count: a power of two up to `batch_size`, then multiples.

    Example:
    >>> [bucket_size(n, 32) for n in (1, 3, 5, 32, 33)]
    [1, 4, 8, 32, 64]
    """
    if num_rows >= batch_size:
        return -(-num_rows // batch_size) * batch_size
    return 1 << max(num_rows - 1, 0).bit_length()


def pad_rows(features, batch_size=DEFAULT_BATCH_SIZE):
    """`features` (a dict of arrays with equal first dims) padded with zero rows.

    Zero rows have an all-zero padding mask, which the backbone accepts.

    Example:
    >>> pad_rows({"token_ids": np.ones((3, 4), "int32")})["token_ids"].shape
    (4, 4)
    """
    rows = len(next(iter(features.values())))
    target = bucket_size(rows, batch_size)
    return {
        name: np.concatenate(
            [value, np.zeros((target - rows,) + value.shape[1:], value.dtype)]
        )
        for name, value in features.items()
    }
