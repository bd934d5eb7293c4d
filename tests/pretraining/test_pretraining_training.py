"""BertPretrainer training on the current backend: loss normalization,
schedule and optimizer, fit with metrics and logs, exact resume, NaN stop."""

import os

import keras
import numpy as np
import pytest

from kbert.optimization.schedules import WarmupLinearDecay
from kbert.pretraining.checkpointing import TrainingCheckpoint, TrainingDivergedError
from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import pretraining_dataset
from kbert.pretraining.training import pretrain, read_metrics
from tests.pretraining.pretraining_helpers import (
    ToyTokenizer,
    max_abs_difference,
    synthetic_documents,
    tiny_pretrainer,
    weights_of,
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pretraining") / "data"
    create_pretraining_data(
        synthetic_documents(80),
        out,
        ToyTokenizer(),
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=1,
        masking="dynamic",
        progress=False,
    )
    return out


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_losses_match_a_hand_computation():
    """MLM: sum(cross-entropy * weight) / sum(weight); NSP: mean cross-entropy."""
    model = tiny_pretrainer(dropout=0.0)
    rng = np.random.default_rng(0)
    batch, length, predictions = 4, 12, 5
    x = {
        "token_ids": rng.integers(5, 100, (batch, length)).astype("int32"),
        "segment_ids": (np.arange(length)[None] >= 6).repeat(batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, length), "int32"),
        "mask_positions": rng.integers(1, length, (batch, predictions)).astype("int32"),
    }
    weights = np.array(
        [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "float32"
    )
    y = {
        "mlm_logits": rng.integers(5, 100, (batch, predictions)).astype("int32"),
        "nsp_logits": np.array([0, 1, 1, 0], "int32"),
    }
    sample_weight = {"mlm_logits": weights, "nsp_logits": np.ones(batch, "float32")}

    if keras.backend.backend() == "jax":  # one compiled call beats op-by-op
        outputs = model.predict(x, verbose=0)
    else:
        outputs = keras.tree.map_structure(keras.ops.convert_to_numpy, model(x))
    mlm_ce = -np.take_along_axis(
        log_softmax(outputs["mlm_logits"].astype("float64")), y["mlm_logits"][..., None], -1
    )[..., 0]
    expected_mlm = (mlm_ce * weights).sum() / weights.sum()
    nsp_ce = -log_softmax(outputs["nsp_logits"].astype("float64"))[
        np.arange(batch), y["nsp_logits"]
    ]
    expected_nsp = nsp_ce.mean()
    assert (
        abs(expected_mlm - (mlm_ce * weights).mean()) > 0.5
    )  # the two normalizations differ

    logs = model.test_on_batch(x, y, sample_weight, return_dict=True)
    np.testing.assert_allclose(logs["mlm_logits_loss"], expected_mlm, rtol=1e-5)
    np.testing.assert_allclose(logs["nsp_logits_loss"], expected_nsp, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], expected_mlm + expected_nsp, rtol=1e-5)
    correct = outputs["mlm_logits"].argmax(-1) == y["mlm_logits"]
    np.testing.assert_allclose(
        logs["mlm_logits_mlm_accuracy"],
        (correct * weights).sum() / weights.sum(),
        atol=1e-6,
    )
    # The loss that is differentiated in a training step is the same one.
    train_logs = model.train_on_batch(x, y, sample_weight, return_dict=True)
    np.testing.assert_allclose(train_logs["mlm_logits_loss"], expected_mlm, rtol=1e-5)


def test_warmup_linear_decay_schedule():
    schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=110)
    values = [
        float(keras.ops.convert_to_numpy(schedule(step)))
        for step in (0, 5, 10, 60, 110, 200)
    ]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule)
    )
    assert isinstance(restored, WarmupLinearDecay)
    assert restored.get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupLinearDecay(1e-3, warmup_steps=20, total_steps=10)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_optimizer_skips_weight_decay_on_layer_norm_and_biases(name):
    model = tiny_pretrainer(optimizer=name, weight_decay=0.01)
    optimizer = model.optimizer
    assert isinstance(
        optimizer, {"adamw": keras.optimizers.AdamW, "lamb": keras.optimizers.Lamb}[name]
    )
    assert optimizer.global_clipnorm == 1.0
    decayed = {v.path: optimizer._use_weight_decay(v) for v in model.trainable_variables}
    for path, uses_decay in decayed.items():
        no_decay = path.endswith(("bias", "gamma", "beta"))
        assert uses_decay != no_decay, path
    assert decayed["masked_lm_head/output_bias"] is False
    assert decayed["transformer_layer_0/intermediate/kernel"] is True
    restored = type(optimizer).from_config(optimizer.get_config())
    assert isinstance(restored._learning_rate, WarmupLinearDecay)


def test_fit_reports_losses_metrics_and_writes_logs(data_dir, tmp_path):
    """Compiled (XLA where it is fastest), mixed bfloat16, LAMB (AdamW, the
    default, trains in the other tests). Validation during `fit` is covered
    by the command-line test."""
    # LAMB scales steps by the weight norm: small initial weights want a high rate.
    model = tiny_pretrainer(
        optimizer="lamb",
        learning_rate=1e-1,
        total_steps=12,
        jit_compile="auto",
        dtype="mixed_bfloat16",
    )
    assert isinstance(model.optimizer, keras.optimizers.Lamb)
    assert model.backbone.transformer_layers[0].compute_dtype == "bfloat16"
    history = pretrain(
        model,
        data_dir,
        total_steps=12,
        batch_size=8,
        steps_per_epoch=6,
        run_dir=tmp_path / "run",
        save_every=6,
        log_every=3,
    )
    for key in (
        "loss",
        "mlm_logits_loss",
        "nsp_logits_loss",
        "mlm_logits_mlm_accuracy",
        "nsp_logits_nsp_accuracy",
    ):
        assert len(history[key]) == 2 and np.isfinite(history[key]).all(), key
    assert history["loss"][1] < history["loss"][0]
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in records if "loss" in r] == [3, 6, 9, 12]
    events = [f for _, _, files in os.walk(tmp_path / "run" / "tensorboard") for f in files]
    assert any(f.startswith("events.out.tfevents") for f in events)
    assert [
        step
        for step, _ in TrainingCheckpoint(tmp_path / "run" / "checkpoints").checkpoints()
    ] == [6, 12]
    # Mixed precision computes in bfloat16 but keeps float32 weights and logits.
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    outputs = model(next(iter(pretraining_dataset(data_dir, 4)))[0])
    assert keras.backend.standardize_dtype(outputs["mlm_logits"].dtype) == "float32"


class SimulatedKill(Exception):
    pass


class KillAfter(keras.callbacks.Callback):
    def __init__(self, steps):
        super().__init__()
        self.steps = steps
        self.seen = 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.steps:
            raise SimulatedKill(f"killed after {self.steps} steps")


def test_killed_run_resumes_to_the_same_weights(data_dir, tmp_path):
    """Epochs of 3 steps, checkpoints every 2: killed at step 5 (mid-epoch, the
    step-5 state lost), the rerun restores step 4 and ends where an
    uninterrupted run ends. Dropout is on: its random state is restored too;
    masks are dynamic: the data restarts at the right batch."""
    options = dict(total_steps=8, batch_size=8, steps_per_epoch=3, save_every=2, verbose=0)

    reference = tiny_pretrainer()
    pretrain(reference, data_dir, run_dir=tmp_path / "reference", **options)
    expected = weights_of(reference)

    with pytest.raises(SimulatedKill):
        pretrain(
            tiny_pretrainer(),
            data_dir,
            run_dir=tmp_path / "run",
            callbacks=[KillAfter(5)],
            **options,
        )
    checkpoints = TrainingCheckpoint(tmp_path / "run" / "checkpoints").checkpoints()
    assert [step for step, _ in checkpoints] == [2, 4]

    resumed = tiny_pretrainer()  # the same command again
    assert max_abs_difference(weights_of(resumed), expected) > 1e-4
    history = pretrain(resumed, data_dir, run_dir=tmp_path / "run", **options)
    assert len(history["loss"]) == 2  # the rest of epoch 2 (steps 5-6), epoch 3 (7-8)
    assert max_abs_difference(weights_of(resumed), expected) <= 1e-6
    assert int(keras.ops.convert_to_numpy(resumed.optimizer.iterations)) == 8


def nan_at_step(data_dir, bad_step):
    """A data function whose batch `bad_step` (1-based) has a NaN weight."""
    import tensorflow as tf

    def make(start_step):
        dataset = pretraining_dataset(data_dir, 8, start_step=start_step)

        def poison(index, batch):
            x, y, sample_weight = batch
            nsp = sample_weight["nsp_logits"]
            bad = tf.equal(index + start_step, bad_step - 1)
            nsp = tf.where(bad, tf.fill(tf.shape(nsp), float("nan")), nsp)
            return x, y, {"mlm_logits": sample_weight["mlm_logits"], "nsp_logits": nsp}

        return dataset.enumerate().map(poison)

    return make


def test_nan_loss_stops_with_a_message_and_keeps_the_last_good_checkpoint(
    data_dir, tmp_path
):
    model = tiny_pretrainer()
    with pytest.raises(
        TrainingDivergedError, match=r"step 6.*last good checkpoint \(step 4\)"
    ):
        pretrain(
            model,
            nan_at_step(data_dir, 6),
            total_steps=10,
            run_dir=tmp_path / "run",
            save_every=2,
            verbose=0,
        )
    checkpoint = TrainingCheckpoint(tmp_path / "run" / "checkpoints")
    assert [step for step, _ in checkpoint.checkpoints()] == [2, 4]
    restored = tiny_pretrainer()
    assert checkpoint.restore(restored) == 4
    assert all(np.isfinite(w).all() for w in weights_of(restored))


def test_checkpoint_writes_are_atomic(tmp_path):
    model = tiny_pretrainer()
    model.optimizer.build(model.trainable_variables)
    checkpoint = TrainingCheckpoint(tmp_path / "ckpt", save_every=1)
    checkpoint.set_model(model)
    checkpoint.step = 1
    checkpoint.save()
    good = weights_of(model)

    def broken_save_weights(path, *args, **kwargs):
        with open(path, "wb") as file:
            file.write(b"half a file")
        raise OSError("disk full")

    model.trainable_variables[0].assign(np.zeros(model.trainable_variables[0].shape))
    original = model.save_weights
    model.save_weights = broken_save_weights
    checkpoint.step = 2
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save()
    model.save_weights = original
    assert os.listdir(tmp_path / "ckpt") == ["ckpt-000000001"]  # no partial, no temp
    restored = tiny_pretrainer()
    assert checkpoint.restore(restored) == 1
    assert max_abs_difference(weights_of(restored), good) == 0.0
