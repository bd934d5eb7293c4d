"""Step checkpoints that resume a run exactly, written atomically.

Keras' `BackupAndRestore` restarts an interrupted epoch from its beginning
and overwrites its files in place (a kill mid-write leaves a broken file).
`TrainingCheckpoint` instead writes `ckpt-{step}` directories whole or not at
all (`kbert.utils.atomic`), each with the weights, the optimizer state and
the random-generator state (dropout), and keeps the last `keep`. Restoring
gives back the step, so the data can restart at the next batch
(`pretraining_dataset(start_step=step)`): a resumed run ends with the same
weights as an uninterrupted one.
"""

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile

import keras
import numpy as np

from kbert.distributed import cluster
from kbert.models.divergence import StopOnNonFiniteLoss, TrainingDivergedError
from kbert.utils.atomic import atomic_directory

_NAME = re.compile(r"^ckpt-(\d+)$")
_WEIGHTS = "model.weights.h5"
_STATE = "state.json"
_RANDOM = "random_state.npz"


class TrainingCheckpoint(keras.callbacks.Callback):
    """Saves the full training state every `save_every` steps; restores it.

    In a multi-process job every process runs the callback and restores from
    the same directory; process 0 alone keeps what it writes, the others
    wait for it.

    Call `restore(model)` before `fit` (the optimizer is built if needed) to
    get the step to resume from. A state with non-finite weights is never
    saved: the run raises `TrainingDivergedError` instead, keeping the last
    good checkpoint.

    Example:
    >>> pretrainer = kbert.BertPretrainer(backbone)
    >>> TrainingCheckpoint("run/checkpoints").restore(pretrainer)  # none yet: step 0
    0
    >>> checkpoint = TrainingCheckpoint(os.path.join(pretraining_run, "checkpoints"))
    >>> checkpoint.restore(pretrainer)  # a run of 2 steps: resume after step 2
    2
    >>> # pretrainer.fit(pretraining_dataset(data, 32, start_step=2),
    >>> #                callbacks=[checkpoint])
    """

    def __init__(self, directory, save_every=1000, keep=2):
        super().__init__()
        self.directory = os.path.abspath(os.fspath(directory))
        self.save_every = int(save_every)
        self.keep = max(1, int(keep))
        self.step = 0
        self.last_saved_step = None
        self._pending_torch_rng = None

    def checkpoints(self):
        """Complete checkpoint directories, oldest first, as (step, path)."""
        if not os.path.isdir(self.directory):
            return []
        found = []
        for name in os.listdir(self.directory):
            match = _NAME.match(name)
            if match and os.path.exists(os.path.join(self.directory, name, _STATE)):
                found.append((int(match.group(1)), os.path.join(self.directory, name)))
        return sorted(found)

    def restore(self, model):
        """Loads the newest checkpoint that loads into `model`; returns its step
        (0 if none).

        A newer one that does not load (a truncated file) is skipped, saying
        which and why; when none loads, a `ValueError` lists them all.
        """
        found = self.checkpoints()
        if not found:
            self.step = 0
            return 0
        if model.optimizer is not None and not model.optimizer.built:
            # A tf.distribute model's optimizer variables belong to its strategy.
            strategy = getattr(model, "distribute_strategy", None)
            with strategy.scope() if strategy else contextlib.nullcontext():
                model.optimizer.build(model.trainable_variables)
        skipped = []
        for step, path in reversed(found):
            try:
                random_state = self._load(model, path)
            except Exception as error:  # any unreadable file: try the one before
                reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
                skipped.append(f"{path} ({reason[:300]})")
                if cluster.is_chief():
                    print(
                        f"Skipping checkpoint {path}: it does not load ({reason[:300]}).",
                        file=sys.stderr,
                        flush=True,
                    )
                continue
            if "torch_rng" in random_state and keras.backend.backend() == "torch":
                self._pending_torch_rng = random_state["torch_rng"]
            self.step = self.last_saved_step = step
            if cluster.is_chief():
                print(f"Resumed from step {step} ({path}).", file=sys.stderr, flush=True)
            return step
        raise ValueError(
            f"No checkpoint in {self.directory} loads into this model: "
            f"{'; '.join(skipped)}. A checkpoint of another model shape does not "
            "load: rerun with the run's arguments, or start afresh (kbert pretrain "
            "--restart, or remove the directory)."
        )

    @staticmethod
    def _load(model, path):
        """Loads one checkpoint's weights and random state; returns the latter."""
        with np.load(os.path.join(path, _RANDOM)) as stored:
            random_state = {key: stored[key] for key in stored.files}
        model.load_weights(os.path.join(path, _WEIGHTS))
        for i, variable in enumerate(model.non_trainable_variables):
            key = f"v{i}"
            if key in random_state:
                variable.assign(random_state[key])
        return random_state

    def on_train_batch_begin(self, batch, logs=None):
        # Unseeded dropout on torch draws from torch's global generator, and so
        # does every `fit` call's set-up (its DataLoader). Re-applying the
        # state right before the first step of each call makes dropout masks
        # depend on the step only, not on how a run was split into calls.
        if self._pending_torch_rng is not None:
            import torch  # lazy: torch only on the torch backend

            torch.set_rng_state(torch.from_numpy(self._pending_torch_rng))
            self._pending_torch_rng = None

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.save_every and self.step % self.save_every == 0:
            self.save()

    def on_train_end(self, logs=None):
        if keras.backend.backend() == "torch":
            import torch  # lazy: torch only on the torch backend

            self._pending_torch_rng = torch.get_rng_state().numpy()
        if self.step != self.last_saved_step and not self.model.stop_training:
            self.save()

    def save(self):
        """Writes `ckpt-{step}` atomically and prunes old ones."""
        model = self.model
        if hasattr(model, "jax_state_sync"):
            model.jax_state_sync()  # JAX keeps the live state outside variables
        if not all(
            np.isfinite(keras.ops.convert_to_numpy(v)).all()
            for v in model.trainable_variables
        ):
            raise TrainingDivergedError(
                f"Weights are not finite at step {self.step}; not saving them. "
                f"{self.describe_last()}"
            )
        chief = cluster.is_chief()
        path = os.path.join(self.directory, f"ckpt-{self.step:09d}")
        # Reading variables that span processes is collective: every process
        # writes, the others into a scratch directory that is thrown away.
        target = atomic_directory(path) if chief else tempfile.TemporaryDirectory()
        with target as tmp:
            model.save_weights(os.path.join(tmp, _WEIGHTS))
            np.savez(os.path.join(tmp, _RANDOM), **_random_state(model))
            with open(os.path.join(tmp, _STATE), "w") as file:
                json.dump({"step": self.step}, file)
        if chief:
            for _, old in self.checkpoints()[: -self.keep]:
                shutil.rmtree(old, ignore_errors=True)
        cluster.barrier(f"checkpoint {self.step}")
        self.last_saved_step = self.step

    def describe_last(self):
        if self.last_saved_step is None:
            return "No checkpoint was saved yet."
        return (
            f"The last good checkpoint (step {self.last_saved_step}) is kept in "
            f"{self.directory}; rerunning the same command resumes from it "
            "(consider a lower learning rate or more warm-up)."
        )


def _random_state(model):
    # Seed-generator states are non-trainable variables. Unseeded dropout on
    # torch draws from torch's global generator instead: save that too.
    state = {
        f"v{i}": keras.ops.convert_to_numpy(v)
        for i, v in enumerate(model.non_trainable_variables)
    }
    if keras.backend.backend() == "torch":
        import torch  # lazy: torch only on the torch backend

        state["torch_rng"] = torch.get_rng_state().numpy()
    return state


class StopOnNaN(StopOnNonFiniteLoss):
    """Raises `TrainingDivergedError` as soon as the loss is NaN or infinite.

    Put it before the `TrainingCheckpoint` in the callback list, so the bad
    step is never saved; the message names the last good checkpoint.

    Example:
    >>> checkpoint = TrainingCheckpoint("run/checkpoints", save_every=100)
    >>> callbacks = [StopOnNaN(checkpoint), checkpoint]  # fit(..., callbacks=callbacks)
    """

    def __init__(self, checkpoint=None):
        super().__init__("the pretraining run")
        self.checkpoint = checkpoint

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            step = self.checkpoint.step + 1 if self.checkpoint is not None else batch + 1
            where = self.checkpoint.describe_last() if self.checkpoint else ""
            raise TrainingDivergedError(
                f"The training loss became {float(loss)} at step {step}; stopping. {where}"
            )
