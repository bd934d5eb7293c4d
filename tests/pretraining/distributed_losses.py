"""Run as a script: losses of a few training steps, single device vs distributed.

`python distributed_losses.py jax` (8 simulated host devices: DataParallel and
ModelParallel on a 2 x 4 mesh) or `... mirrored` (TensorFlow, 2 logical CPUs)
prints one JSON line {"single": [...], "<kind>": [...], "<kind>_sharding": ...}.
Device simulation must be set up before JAX or TensorFlow start, hence a
separate process.
"""

import json
import os
import sys

KIND = sys.argv[1]
if KIND == "mirrored":
    os.environ["KERAS_BACKEND"] = "tensorflow"
else:
    os.environ["KERAS_BACKEND"] = "jax"
    # Eight simulated devices; the lowest LLVM optimization level compiles faster.
    os.environ["XLA_FLAGS"] = (
        "--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0"
    )

import keras  # noqa: E402
import numpy as np  # noqa: E402

if KIND == "mirrored":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )

import kbert  # noqa: E402
from kbert.distributed import strategies  # noqa: E402
from kbert.optimization.optimizers import bert_optimizer  # noqa: E402

BATCH, LENGTH, PREDICTIONS, VOCABULARY = 16, 16, 4, 64
rng = np.random.default_rng(0)
x = {
    "token_ids": rng.integers(5, VOCABULARY, (BATCH, LENGTH)).astype("int32"),
    "segment_ids": (np.arange(LENGTH)[None] >= 8).repeat(BATCH, 0).astype("int32"),
    "padding_mask": np.ones((BATCH, LENGTH), "int32"),
    "mask_positions": rng.integers(1, LENGTH, (BATCH, PREDICTIONS)).astype("int32"),
}
y = {
    "mlm_logits": rng.integers(5, VOCABULARY, (BATCH, PREDICTIONS)).astype("int32"),
    "nsp_logits": rng.integers(0, 2, BATCH).astype("int32"),
}
# MirroredStrategy normalizes the MLM loss per replica (as BERT did per TPU
# core): equal weight sums per example make that equal to the global mean.
# JAX computes one global loss, so there the weights can be ragged.
if KIND == "mirrored":
    mlm_weights = np.ones((BATCH, PREDICTIONS), "float32")
else:
    mlm_weights = np.arange(PREDICTIONS)[None] < rng.integers(
        1, PREDICTIONS + 1, (BATCH, 1)
    )
    mlm_weights = mlm_weights.astype("float32")
sample_weight = {"mlm_logits": mlm_weights, "nsp_logits": np.ones(BATCH, "float32")}


def build(jit_compile):
    keras.utils.set_random_seed(3)
    backbone = kbert.BertBackbone(
        vocabulary_size=VOCABULARY,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=LENGTH,
        dropout=0.0,
        attention_dropout=0.0,
    )
    model = kbert.BertPretrainer(backbone, compile=False)
    model.compile(
        optimizer=bert_optimizer(total_steps=10, learning_rate=1e-2, warmup_steps=0),
        jit_compile=jit_compile,
    )
    return model


class Losses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.values = []

    def on_train_batch_end(self, batch, logs=None):
        self.values.append(float(logs["loss"]))


def train(model):
    losses = Losses()
    model.fit(
        x,
        y,
        sample_weight=sample_weight,
        batch_size=BATCH,
        epochs=3,
        shuffle=False,
        verbose=0,
        callbacks=[losses],
    )
    return losses.values


# XLA cannot place MirroredStrategy replicas on logical CPU devices.
jit_compile = KIND != "mirrored"
single_model = build(jit_compile)
initial = single_model.get_weights()
results = {"single": train(single_model)}

if KIND == "mirrored":
    strategy = strategies.mirrored_strategy()
    with strategy.scope():
        model = build(jit_compile)
    model.set_weights(initial)
    results["mirrored"] = train(model)
    results["mirrored_sharding"] = f"{strategy.num_replicas_in_sync} replicas"
else:
    for kind, setting in (
        ("data_parallel", strategies.data_parallel()),
        ("model_parallel", strategies.model_parallel(model_parallel_size=4)),
    ):
        keras.distribution.set_distribution(setting)
        model = build(jit_compile)
        model.set_weights(initial)
        kernel = next(
            v
            for v in model.trainable_variables
            if v.path == "transformer_layer_0/intermediate/kernel"
        )
        results[kind + "_sharding"] = str(kernel.value.sharding)
        results[kind] = train(model)
print(json.dumps(results))
