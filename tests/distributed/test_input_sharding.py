"""Per-process input shards: over one epoch, every example is read by exactly
one process (pretraining TFRecords and raw-string fine-tuning data)."""

import collections
import json

import keras
import numpy as np
import pytest

from kbert.distributed.cluster import cluster_settings, shard_rows
from kbert.distributed.tf_multi_worker import tf_config_workers
from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import pretraining_dataset, read_metadata
from tests.pretraining.pretraining_helpers import ToyTokenizer, synthetic_documents

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="backend-independent (tf.data, pure Python); runs on the jax pass",
)


def examples(dataset):
    """Each example of a dataset of batches as a hashable key (its token ids)."""
    keys = []
    for x, _, _ in dataset.as_numpy_iterator():
        keys += [tuple(row) for row in x["token_ids"].tolist()]
    return keys


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sharding") / "data"
    tokenizer = ToyTokenizer()
    create_pretraining_data(
        synthetic_documents(10),
        directory,
        tokenizer,
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=1,
        num_shards=3,  # three TFRecord files
        progress=False,
    )
    return str(directory)


def test_pretraining_shards_partition_an_epoch(data):
    total = read_metadata(data)["num_instances"]
    everything = collections.Counter(examples(pretraining_dataset(data, 4, training=False)))
    assert sum(everything.values()) == total > 8
    # Reading once (evaluation order) and one training epoch (shuffled, repeating).
    for training in (False, True):
        shards = []
        for index in range(2):
            dataset = pretraining_dataset(
                data, 2, training=training, num_shards=2, shard_index=index
            )
            size = (total + 1 - index) // 2  # records are dealt out in turn
            shards.append(examples(dataset.take(size) if training else dataset)[:size])
        assert collections.Counter(shards[0] + shards[1]) == everything
        assert abs(len(shards[0]) - len(shards[1])) <= 1


def test_pretraining_shards_make_the_global_batch(data):
    whole = next(iter(pretraining_dataset(data, 4, num_shards=2, shard_index=0)))
    assert whole[0]["token_ids"].shape[0] == 2  # batch_size is the global batch
    with pytest.raises(ValueError, match="does not split over 2 shards"):
        pretraining_dataset(data, 5, num_shards=2)


def test_raw_string_shards_partition_whole_batches():
    order = np.random.RandomState(0).permutation(23)
    shards = [shard_rows(order, 6, 3, index) for index in range(3)]
    read = [row for shard in shards for row in shard]
    assert len(read) == len(set(read)) == 18  # 3 whole global batches of 6
    assert set(read) == set(order[:18].tolist())
    # Global batch k is the processes' k-th local batches together.
    for k in range(3):
        batch = [row for shard in shards for row in shard[2 * k : 2 * k + 2]]
        assert batch == order[6 * k : 6 * k + 6].tolist()
    with pytest.raises(ValueError, match="does not split over 4 processes"):
        shard_rows(order, 6, 4, 0)


def test_cluster_settings_from_flags_and_environment():
    env = {"SLURM_NTASKS": "4", "SLURM_PROCID": "2", "JAX_PROCESS_ID": "1"}
    assert cluster_settings(environ=env).process_id == 1  # JAX's variables first
    assert cluster_settings("h:1", 2, 0, environ=env).num_processes == 2
    with pytest.raises(ValueError, match="process_id=5 is outside 0..1"):
        cluster_settings("h:1", 2, 5, environ={})
    with pytest.raises(ValueError, match="needs a port"):
        cluster_settings("10.0.0.1", 2, 0, environ={})


def test_tf_config_names_this_worker_or_is_refused():
    cluster = {"chief": ["c:1"], "worker": ["w:1", "w:2"]}
    config = {"cluster": cluster, "task": {"type": "worker", "index": 1}}
    assert tf_config_workers({"TF_CONFIG": json.dumps(config)}) == (
        ["c:1", "w:1", "w:2"],
        2,  # workers count after the chief
    )
    with pytest.raises(ValueError, match="TF_CONFIG is not a cluster description"):
        tf_config_workers({"TF_CONFIG": "{'cluster': []}"})
    config["task"]["index"] = 2
    with pytest.raises(ValueError, match=r"this task \(worker 2\) is not one of"):
        tf_config_workers({"TF_CONFIG": json.dumps(config)})
