"""`hf://` handles resolve through huggingface_hub's cache, offline."""

import hashlib
import os

import numpy as np
import pytest

import kbert
from kbert.sources import resolve_preset

COMMIT = "0123456789abcdef0123456789abcdef01234567"
HANDLE = "hf://sentence-transformers/all-MiniLM-L6-v2"
SENTENCES = ["A man is eating food.", "Offline hub caches work too!"]


def build_hub_cache(cache, source, repo_id, commit, tags=()):
    """huggingface_hub's cache layout for `source`'s files: blobs named by
    content hash, a snapshot of symlinks to them, and refs to the commit."""
    repo = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    for folder in ("blobs", os.path.join("snapshots", commit), "refs"):
        os.makedirs(os.path.join(repo, folder), exist_ok=True)
    for root, _, files in os.walk(source):
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, source)
            with open(path, "rb") as file:
                blob = os.path.join(repo, "blobs", hashlib.sha256(file.read()).hexdigest())
            if not os.path.exists(blob):
                os.symlink(path, blob)
            link = os.path.join(repo, "snapshots", commit, relative)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)
    for ref in ("main", *tags):
        with open(os.path.join(repo, "refs", ref), "w") as file:
            file.write(commit)


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An offline huggingface_hub whose cache (in tmp_path) holds MiniLM."""
    from huggingface_hub import constants

    cache = str(tmp_path / "hub")
    build_hub_cache(
        cache, resolve_preset("all_minilm_l6_v2"), HANDLE[5:], COMMIT, tags=("v1",)
    )
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", cache)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads its environment once, on import.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", cache)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_hub_handle_loads_like_the_directory(offline_hub):
    directory = resolve_preset("all_minilm_l6_v2")
    expected = kbert.BertTextEmbedder.from_preset(directory, sequence_length=32)
    expected = expected.predict(SENTENCES, verbose=0)
    for handle in (HANDLE, f"{HANDLE}@v1", f"{HANDLE}@{COMMIT}"):
        snapshot = kbert.sources.resolve_source(handle)
        assert snapshot.startswith(offline_hub) and snapshot.endswith(COMMIT)
    embedder = kbert.BertTextEmbedder.from_preset(f"{HANDLE}@v1", sequence_length=32)
    np.testing.assert_array_equal(embedder.predict(SENTENCES, verbose=0), expected)
    tokenizer = kbert.BertTokenizer.from_preset(HANDLE)
    reference = kbert.BertTokenizer.from_preset(directory)
    assert tokenizer.get_vocabulary() == reference.get_vocabulary()
    preprocessor = kbert.BertPreprocessor.from_preset(HANDLE, sequence_length=16)
    np.testing.assert_array_equal(
        np.asarray(preprocessor(SENTENCES)["token_ids"]),
        np.asarray(
            kbert.BertPreprocessor.from_preset(directory, sequence_length=16)(SENTENCES)[
                "token_ids"
            ]
        ),
    )
    from kbert.presets.formats import detect_task

    assert detect_task(HANDLE) == "text_embedder"


def test_uncached_handle_offline_is_a_clear_error(offline_hub):
    with pytest.raises(
        ValueError, match=r"'hf://org/missing' is not in the Hugging Face cache"
    ):
        kbert.BertBackbone.from_preset("hf://org/missing")
    with pytest.raises(ValueError, match="not in the Hugging Face cache"):
        kbert.BertTokenizer.from_preset(f"{HANDLE}@no-such-tag")


@pytest.mark.parametrize("handle", ["hf://", "hf://a/b/c", "hf://org/name@"])
def test_malformed_handle(handle):
    with pytest.raises(ValueError, match="is not a Hugging Face Hub handle"):
        kbert.sources.resolve_source(handle)
