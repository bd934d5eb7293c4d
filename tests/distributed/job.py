"""One process of a 2-process job on loopback: JAX (2 CPU devices each) or
TensorFlow `MultiWorkerMirroredStrategy` (one CPU replica each).

`python job.py PROCESS_ID WORKDIR PHASE BACKEND`, ports in `KBERT_TEST_PORT`
(and `KBERT_TEST_PORT2` for TensorFlow's second worker). WORKDIR holds
`data/` (pretraining TFRecords) and `preset/` (a tiny preset).

PHASE "train": process 0 first runs the one-device references on the global
batches (the two shards' batches together): 4 pretraining steps, a fine-tune
on raw strings, and the backbone's outputs. Then both processes run
data-parallel pretraining for 2 steps (checkpoint at step 2), fine-tuning,
and on JAX the backbone under `ModelParallel` over all 4 devices.
PHASE "resume": a new job continues the run to step 4 from the checkpoint.
Prints one JSON line per process.
"""

import contextlib
import json
import os
import sys
import time

START = time.monotonic()

PROCESS_ID, WORKDIR, PHASE, BACKEND = sys.argv[1:5]
PROCESS_ID = int(PROCESS_ID)
os.environ["KERAS_BACKEND"] = BACKEND
if BACKEND == "jax":
    os.environ["XLA_FLAGS"] = (
        "--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=0"
    )
elif PHASE == "reference":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
else:
    ports = os.environ["KBERT_TEST_PORT"], os.environ["KBERT_TEST_PORT2"]
    os.environ["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
            "task": {"type": "worker", "index": PROCESS_ID},
        }
    )

from kbert.distributed import cluster, tf_multi_worker  # noqa: E402

if BACKEND == "jax":
    cluster.join_cluster(f"127.0.0.1:{os.environ['KBERT_TEST_PORT']}", 2, PROCESS_ID)
elif PHASE != "reference":
    cluster.join_cluster()  # TF_CONFIG: connects the workers

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import kbert  # noqa: E402
from kbert.distributed import strategies  # noqa: E402
from kbert.finetuning.classifier_training import (  # noqa: E402
    _shard,
    build_classifier,
    train_classifier,
)
from kbert.finetuning.recipe import FinetuneRecipe  # noqa: E402
from kbert.optimization.optimizers import bert_optimizer  # noqa: E402
from kbert.pretraining.dataset import pretraining_dataset  # noqa: E402
from kbert.pretraining.training import pretrain  # noqa: E402

DATA = os.path.join(WORKDIR, "data")
RUN = os.path.join(WORKDIR, "run")
PRESET = os.path.join(WORKDIR, "preset")
BATCH, STEPS = 8, 4
RECIPE = FinetuneRecipe(
    preset=PRESET, sequence_length=8, batch_size=4, learning_rate=1e-3, epochs=1
)
TEXTS = ["good fun movie", "dull awful plot", "a very good plot", "not fun", "the movie"]
TEXTS = [TEXTS[i % 5] + " " + TEXTS[(3 * i) % 5] for i in range(16)]
LABELS = np.array([i % 2 for i in range(16)])


class Losses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.values = []

    def on_train_batch_end(self, batch, logs=None):
        self.values.append(float(logs["loss"]))


def pretrainer():
    keras.utils.set_random_seed(3)
    backbone = kbert.BertBackbone(
        vocabulary_size=413,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
        dropout=0.0,
        attention_dropout=0.0,
    )
    model = kbert.BertPretrainer(backbone, compile=False)
    model.compile(
        optimizer=bert_optimizer(total_steps=STEPS, learning_rate=1e-2, warmup_steps=0),
        jit_compile=BACKEND == "jax",
    )
    return model


def global_batches(start_step):
    """The job's global batches: both processes' shards, concatenated."""
    shards = [
        pretraining_dataset(DATA, BATCH, start_step=start_step, num_shards=2, shard_index=i)
        for i in (0, 1)
    ]
    return tf.data.Dataset.zip(tuple(shards)).map(
        lambda a, b: tf.nest.map_structure(lambda u, v: tf.concat([u, v], 0), a, b)
    )


def token_inputs():
    rng = np.random.default_rng(0)
    return {
        "token_ids": rng.integers(5, 413, (4, 12)).astype("int32"),
        "segment_ids": np.zeros((4, 12), "int32"),
        "padding_mask": (np.arange(12) < np.array([[12], [9], [5], [12]])).astype("int32"),
    }


def data_parallel():
    """A context in which models are built data parallel over the job."""
    if BACKEND == "tensorflow":
        return cluster_strategy.scope()
    keras.distribution.set_distribution(strategies.data_parallel())
    return contextlib.nullcontext()


def gathered(value):
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(value, tiled=True))


IMPORTED = round(time.monotonic() - START)
cluster_strategy = tf_multi_worker.joined_strategy()
result = {
    "seconds": {"imports": IMPORTED},
    "process": PROCESS_ID,
    "devices": (
        cluster_strategy.num_replicas_in_sync
        if cluster_strategy
        else len(keras.distribution.list_devices())
    ),
}
first = pretrainer()  # on this process's own device
initial, backbone_initial = first.get_weights(), first.backbone.get_weights()
if PHASE == "reference" or (PHASE == "train" and BACKEND == "jax" and PROCESS_ID == 0):
    # TensorFlow's reference is a one-process MirroredStrategy run on 2 CPUs,
    # in a job of its own: it normalizes the MLM loss per replica, as the
    # multi-worker job does (and BERT did per TPU core).
    if BACKEND == "tensorflow":
        reference_scope = strategies.mirrored_strategy().scope
    else:
        reference_scope = contextlib.nullcontext
    with reference_scope():
        reference = pretrainer()
    reference.set_weights(initial)
    losses = Losses()
    pretrain(reference, global_batches, STEPS, steps_per_epoch=1, callbacks=[losses])
    result["single_pretraining"] = losses.values
    backbone = first.backbone
    result["single_outputs"] = keras.ops.convert_to_numpy(
        backbone(token_inputs())["sequence_output"]
    ).tolist()
    start = build_classifier(RECIPE, 2, len(LABELS)).get_weights()
    with reference_scope():
        model = build_classifier(RECIPE, 2, len(LABELS))
    model.set_weights(start)
    # The one-device run on the job's global batches (the shards together).
    order = RECIPE.epoch_order(len(LABELS), 0)
    parts = [_shard(model, TEXTS, LABELS, order, 4, 2, i) for i in (0, 1)]
    x = {
        name: np.concatenate(
            [p[0][name][2 * k : 2 * k + 2] for k in range(4) for p in parts]
        )
        for name in parts[0][0]
    }
    y = np.concatenate([p[1][2 * k : 2 * k + 2] for k in range(4) for p in parts])
    losses = Losses()
    model.fit(x, y, batch_size=4, shuffle=False, callbacks=[losses], verbose=0)
    result["single_finetuning"] = losses.values
if PHASE == "train":
    result["seconds"]["references"] = round(time.monotonic() - START)
    cluster.barrier("references done")
    finetune_initial = build_classifier(RECIPE, 2, len(LABELS)).get_weights()

    with data_parallel():
        model = pretrainer()
    model.set_weights(initial)
    losses = Losses()
    pretrain(
        model, DATA, 2, batch_size=BATCH, steps_per_epoch=1, run_dir=RUN, save_every=2,
        callbacks=[losses], verbose=0,
    )  # fmt: skip
    result["pretraining"] = losses.values
    result["checkpoints"] = sorted(os.listdir(os.path.join(RUN, "checkpoints")))
    result["seconds"]["pretraining"] = round(time.monotonic() - START)

    with data_parallel():
        model = build_classifier(RECIPE, 2, len(LABELS))
    model.set_weights(finetune_initial)
    _, curve, _ = train_classifier(model, RECIPE, (TEXTS, LABELS), verbose=0)
    result["finetuning"] = curve.losses
    result["seconds"]["finetuning"] = round(time.monotonic() - START)

if PHASE == "train" and BACKEND == "jax":
    keras.distribution.set_distribution(strategies.model_parallel(4))
    backbone = pretrainer().backbone
    backbone.set_weights(backbone_initial)
    kernel = next(
        v for v in backbone.weights if v.path.endswith("layer_0/intermediate/kernel")
    )
    result["model_parallel_sharding"] = str(kernel.value.sharding.spec)
    result["model_parallel_outputs"] = gathered(
        backbone(token_inputs())["sequence_output"]
    ).tolist()
if PHASE == "resume":
    with data_parallel():
        model = pretrainer()
    losses = Losses()
    pretrain(
        model, DATA, STEPS, batch_size=BATCH, steps_per_epoch=1, run_dir=RUN,
        save_every=2, callbacks=[losses], verbose=0,
    )  # fmt: skip
    result["pretraining"] = losses.values
    result["checkpoints"] = sorted(os.listdir(os.path.join(RUN, "checkpoints")))
result["seconds"]["end"] = round(time.monotonic() - START)
print(json.dumps(result))
