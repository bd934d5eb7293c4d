"""`distributed_predict` and `kbert embed --engine ray` on 2 local Ray workers.

The heavy checks run once, in the PyTorch run: `kbert embed` over 2,000 real
Rotten Tomatoes reviews with blank lines (two input files, shards out, one
shard failing once) with a tiny random embedder on MiniLM's vocabulary;
class predictions of the same 2,000 reviews with a tiny random classifier
on that vocabulary; and the demo classifier (all-MiniLM-L6-v2 fine-tuned)
on 500 of them (all 2,000 take about 95 s on this shared 2-core machine,
over the suite's budget): sharding, ordering and retries are the engine's
and do not depend on the Keras backend, and a model's numerics per backend
are tests/models' business. Every backend runs a cheap check: a tiny model on 2
Ray workers, which load it on that backend.

Ray starts here, on 127.0.0.1 with 2 CPUs and no dashboard, once per module,
and is shut down after it; every test is bounded by an alarm.
"""

import contextlib
import os
import signal
import warnings

import keras
import numpy as np
import pytest

pytest.importorskip("ray", reason="kbert-keras[ray] is not installed")

from kbert.cli import main  # noqa: E402
from kbert.data import rotten_tomatoes  # noqa: E402
from kbert.inference.distributed_predict import (  # noqa: E402
    distributed_predict,
    predict_shards,
)
from kbert.utils import ray_engine  # noqa: E402

pytestmark = pytest.mark.whole_machine
HEAVY = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the 2,000-review runs go once, in the PyTorch run (see the docstring)",
)


@contextlib.contextmanager
def bounded(seconds):
    """Raises TimeoutError in the test when the block runs past `seconds`."""

    def expire(*_):
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def ray_workers(tmp_path_factory):
    """A local Ray with 2 worker CPUs; item 1 of the first Ray map fails once."""
    marker = tmp_path_factory.mktemp("fail") / "failed-once"
    saved = os.environ.get(ray_engine.FAIL_ONCE_VARIABLE)
    os.environ[ray_engine.FAIL_ONCE_VARIABLE] = f"1:{marker}"
    # Ray's memory monitor judges the whole (shared) machine: off for the test.
    os.environ["RAY_memory_monitor_refresh_ms"] = "0"
    session = ray_engine.ray_session(2)
    try:
        with bounded(60):
            session.__enter__()
        yield marker
        session.__exit__(None, None, None)
    finally:
        os.environ.pop(ray_engine.FAIL_ONCE_VARIABLE)
        os.environ.pop("RAY_memory_monitor_refresh_ms")
        if saved is not None:
            os.environ[ray_engine.FAIL_ONCE_VARIABLE] = saved


@pytest.fixture(scope="module")
def minilm_vocabulary_presets(tmp_path_factory):
    """A tiny random embedder and classifier with MiniLM's real vocabulary
    (their outputs vary with every review, unlike the 13-word tiny preset's),
    as presets: `(embedder, classifier)`. The classifier's head is centred on
    the reviews, so that every class is predicted."""
    import kbert
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer
    from kbert.presets.formats import load_preprocessor
    from kbert.sources import resolve_source
    from tests.test_case import randomized, tiny_backbone

    vocabulary = load_preprocessor(
        resolve_source("all_minilm_l6_v2")
    ).tokenizer.get_vocabulary()
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary), sequence_length=64)
    backbone = tiny_backbone(vocabulary_size=len(vocabulary), max_sequence_length=64)
    classifier = randomized(
        kbert.BertClassifier(backbone, num_classes=3, preprocessor=preprocessor)
    )
    bias = next(v for v in classifier.weights if v.path == "classifier/bias")
    bias.assign(bias.numpy() - classifier.predict(reviews()[:200], verbose=0).mean(0))
    directory = tmp_path_factory.mktemp("minilm_vocabulary")
    kbert.BertTextEmbedder(backbone, preprocessor=preprocessor).save_to_preset(
        directory / "embedder"
    )
    classifier.save_to_preset(directory / "classifier")
    return str(directory / "embedder"), str(directory / "classifier")


def reviews(count=2000, blank_every=150):
    """`count` real reviews, one line each, a blank line every `blank_every`."""
    texts, _ = rotten_tomatoes(categories=("fresh", "rotten"))
    texts = iter(" ".join(text.split()) for text in texts)
    return ["" if i % blank_every == 7 else next(texts) for i in range(count)]


def cosine(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@HEAVY
def test_embed_command_on_ray_matches_one_process(
    ray_workers, tmp_path, minilm_vocabulary_presets
):
    texts = reviews()
    assert len(texts) == 2000 and texts.count("") == 14
    for part in range(2):  # a glob in: two files of 1,000 lines
        lines = texts[part * 1000 : (part + 1) * 1000]
        (tmp_path / f"reviews-{part}.txt").write_text("\n".join(lines) + "\n")
    pattern = str(tmp_path / "reviews-*.txt")
    with bounded(240):
        model = ["--preset", minilm_vocabulary_presets[0]]
        assert main(["embed", pattern, str(tmp_path / "one.npy"), *model]) == 0
        argv = ["embed", pattern, str(tmp_path / "ray" / "part-*.npy"), "--engine", "ray"]
        assert main([*argv, *model, "--workers", "2", "--shard-size", "400"]) == 0
    # Shards out: one file per input file, in order.
    parts = sorted((tmp_path / "ray").glob("part-*.npy"))
    assert [p.name for p in parts] == ["part-00000-of-00002.npy", "part-00001-of-00002.npy"]
    distributed = np.concatenate([np.load(p) for p in parts])
    one = np.load(tmp_path / "one.npy")
    assert distributed.shape == one.shape and len(one) == 2000
    assert cosine(distributed, one).min() >= 0.99999
    assert len(np.unique(one.round(4), axis=0)) > 1500  # rows that differ
    # Shard 1 failed once and ran again; its rows count once.
    assert ray_workers.exists()


def assert_classes_as_one_process(preset, texts, shard_size, atol):
    """The classifier `preset` on 2 Ray workers predicts the classes of one
    process (values within `atol`), row for row; returns one process's."""
    import kbert

    with bounded(240):
        distributed = distributed_predict(preset, texts, workers=2, shard_size=shard_size)
        one = kbert.BertClassifier.from_preset(preset).predict(texts, verbose=0)
    assert distributed.shape == one.shape and len(one) == len(texts)
    np.testing.assert_array_equal(distributed.argmax(-1), one.argmax(-1))
    np.testing.assert_allclose(distributed, one, atol=atol)
    return one


@HEAVY
def test_classifier_predictions_on_ray_equal_one_process(ray_workers):
    from tests.trained_models import demo_classifier_preset

    one = assert_classes_as_one_process(
        demo_classifier_preset(), reviews()[:500], shard_size=125, atol=1e-4
    )
    assert one.shape == (500, 2)


@HEAVY
def test_class_predictions_on_ray_equal_one_process_on_2000_reviews(
    ray_workers, minilm_vocabulary_presets
):
    one = assert_classes_as_one_process(
        minilm_vocabulary_presets[1], reviews(), shard_size=400, atol=1e-5
    )
    assert one.shape == (2000, 3)
    # Not a constant model: rows differ, and every class is predicted.
    assert (
        len(np.unique(one.argmax(-1))) == 3 and len(np.unique(one.round(4), axis=0)) > 1500
    )


def truncation_warnings(function, *args, **kwargs):
    """`(result, [the TruncationWarnings it gave])`."""
    import kbert

    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [w.message for w in found if w.category is kbert.TruncationWarning]


def counts(message):
    return message.truncated, message.total, message.longest, message.limit


def test_a_model_in_memory_runs_on_ray_workers_of_this_backend(ray_workers, tiny_preset):
    import kbert

    embedder = kbert.BertTextEmbedder.from_preset(tiny_preset)
    texts = reviews(count=60, blank_every=20)
    with bounded(120):
        distributed, (warning,) = truncation_warnings(
            distributed_predict, embedder, texts, workers=2, shard_size=25
        )
    one, (whole,) = truncation_warnings(embedder.predict, texts, verbose=0)
    assert cosine(distributed, one).min() >= 0.99999
    # The workers' counts of cut texts, summed: one warning for the call,
    # as one process gives it (reviews are longer than sequence_length=12).
    assert counts(warning) == counts(whole) and 0 < whole.truncated < len(texts)
    assert whole.total == len(texts)


def test_one_truncation_warning_per_call_for_all_shards(tiny_preset):
    """engine="local": the same workers and shards, in this process."""
    import kbert

    texts = ["good"] * 4 + [" ".join(["very"] * 20), "bad", " ".join(["fun"] * 30)]
    outputs, found = truncation_warnings(
        distributed_predict, tiny_preset, texts, engine="local", shard_size=2
    )
    embedder = kbert.BertTextEmbedder.from_preset(tiny_preset)
    one, (whole,) = truncation_warnings(embedder.predict, texts, verbose=0)
    # two shards cut a text each: one warning, as one process gives it
    assert [counts(w) for w in found] == [counts(whole)] == [(2, 7, 32, 12)]
    np.testing.assert_allclose(outputs, one, atol=1e-6)
    _, found = truncation_warnings(
        distributed_predict, tiny_preset, texts, engine="local", long_texts="windows"
    )
    assert not found
    # `kbert embed` stops at the last shard (zip): the warning comes with it.
    shards = [texts[:4], texts[4:6], texts[6:]]
    results = predict_shards(tiny_preset, shards, engine="local", task="text_embedder")
    parts, found = truncation_warnings(lambda: [r for _, r in zip(shards, results)])
    assert [counts(w) for w in found] == [(2, 7, 32, 12)] and len(parts) == 3


def test_bad_engine_inputs_are_refused_clearly(tmp_path, tiny_preset, monkeypatch):
    with pytest.raises(ValueError, match="Unknown engine 'beam'"):
        distributed_predict(tiny_preset, ["a"], engine="beam")
    with pytest.raises(ValueError, match="no files match"):
        distributed_predict(tiny_preset, str(tmp_path / "none-*.txt"), engine="local")
    with pytest.raises(ValueError, match="no such file"):
        distributed_predict(tiny_preset, str(tmp_path / "missing.txt"), engine="local")
    with pytest.raises(ValueError, match="workers must be at least 1"):
        distributed_predict(tiny_preset, ["a"], workers=0)
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # not installed
    with pytest.raises(ImportError, match=r"pip install kbert-keras\[ray\]"):
        distributed_predict(tiny_preset, ["a"], engine="ray")


def test_embed_command_refuses_an_empty_glob(tmp_path, capsys):
    argv = ["embed", str(tmp_path / "none-*.txt"), str(tmp_path / "e.npy")]
    assert main([*argv, "--engine", "ray"]) == 1
    assert "no files match" in capsys.readouterr().err
