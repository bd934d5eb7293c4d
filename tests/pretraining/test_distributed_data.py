"""Pretraining data created on 2 local Ray workers equals the one-process run.

Runs in the TensorFlow run only, where the other pretraining-data tests run:
creating the data (WordPiece on tensorflow-text, TFRecords) does not depend
on the Keras backend. Ray starts on 127.0.0.1 with 2 CPUs and no dashboard
and is shut down by the run; the test is bounded by an alarm.
"""

import signal

import keras
import pytest

pytest.importorskip("ray", reason="kbert-keras[ray] is not installed")

from kbert.data import wikipedia_articles  # noqa: E402
from kbert.preprocessing.tokenizer import BertTokenizer  # noqa: E402
from kbert.presets.formats import load_preprocessor  # noqa: E402
from kbert.pretraining.data_creation import create_pretraining_data  # noqa: E402
from kbert.pretraining.documents import documents_from_texts  # noqa: E402
from kbert.sources import resolve_source  # noqa: E402

pytestmark = [
    pytest.mark.whole_machine,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="pretraining data is created in the TensorFlow run (see the docstring)",
    ),
]


def records(directory):
    import tensorflow as tf

    files = sorted(str(p) for p in directory.glob("*.tfrecord"))
    return [record.numpy() for record in tf.data.TFRecordDataset(files)]


def test_ray_workers_write_the_instances_of_the_one_process_run(tmp_path):
    # The whole gensim sample: 206 articles, 107 of them not redirects.
    texts = [text for _, text in wikipedia_articles() if not text.startswith("REDIRECT")]
    assert len(texts) == 107
    documents = list(documents_from_texts(texts))
    vocabulary = load_preprocessor(resolve_source("all_minilm_l6_v2")).tokenizer
    tokenizer = BertTokenizer(vocabulary=vocabulary.get_vocabulary())
    options = dict(
        max_seq_length=64,
        dupe_factor=2,
        masking="dynamic",
        seed=7,
        document_buffer_size=8,
        num_shards=2,
        progress=False,
    )

    def expire(*_):
        raise TimeoutError("over 240 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(240)
    try:
        one = create_pretraining_data(documents, tmp_path / "one", tokenizer, **options)
        ray = create_pretraining_data(
            documents, tmp_path / "ray", tokenizer, engine="ray", workers=2, **options
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert one["num_instances"] == ray["num_instances"] > 20_000
    assert one["num_tokens"] == ray["num_tokens"]
    local, distributed = records(tmp_path / "one"), records(tmp_path / "ray")
    assert len(local) == len(distributed) == one["num_instances"]
    assert sorted(local) == sorted(distributed)  # the same set of instances
    assert local == distributed  # and, written in window order, the same files
