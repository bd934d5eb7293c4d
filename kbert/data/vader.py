"""Human-rated sentences from the VADER paper (`vaderSentiment==3.3.2` sdist).

The sdist's `additional_resources/hutto_ICWSM_2014.tar.gz` holds four
`*_GroundTruth.txt` files of `id<TAB>mean rating<TAB>sentence` lines: the mean
of about 20 human sentiment ratings on a -4 (extremely negative) to +4
(extremely positive) scale (Hutto & Gilbert, ICWSM 2014).
"""

import functools
import io
import tarfile

from kbert.data.packages import read_package_member

_MEMBER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
SOURCES = {
    "tweets": "tweets_GroundTruth.txt",
    "movie_reviews": "movieReviewSnippets_GroundTruth.txt",
    "amazon_reviews": "amazonReviewSnippets_GroundTruth.txt",
    "nyt_editorials": "nytEditorialSnippets_GroundTruth.txt",
}


@functools.lru_cache(maxsize=1)
def _files():
    inner = read_package_member("vaderSentiment", _MEMBER)
    with tarfile.open(fileobj=io.BytesIO(inner)) as archive:
        return {
            source: archive.extractfile(f"hutto_ICWSM_2014/{name}").read()
            for source, name in SOURCES.items()
        }


def vader_sentences(sources=tuple(SOURCES)):
    """Sentences with their mean human sentiment rating in [-4, 4].

    Args:
        sources: any of `"tweets"` (4,200), `"movie_reviews"` (10,605),
            `"amazon_reviews"` (3,708) and `"nyt_editorials"` (5,190).

    Returns:
        `(texts, scores)`: a list of str and a list of float, in the order
        of `sources` and then of the files.

    Example:
    >>> texts, scores = vader_sentences(sources=("tweets",))
    >>> len(texts), min(scores) >= -4, max(scores) <= 4
    (4200, True, True)
    """
    unknown = set(sources) - set(SOURCES)
    if unknown:
        raise ValueError(f"Unknown sources {sorted(unknown)}; use {list(SOURCES)}.")
    texts, scores = [], []
    for source in sources:
        for line in _files()[source].decode("utf-8").splitlines():
            _, score, text = line.split("\t", 2)
            texts.append(text)
            scores.append(float(score))
    return texts, scores
