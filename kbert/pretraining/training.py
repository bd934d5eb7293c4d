"""The pretraining loop: `fit` with exact resume, NaN stop, logs and curves.

`pretrain` restores the newest checkpoint, positions the data at the next
batch and runs `model.fit` (split in up to three calls so a resumed partial
epoch keeps the epoch numbering), with `StopOnNaN`, `TrainingCheckpoint`,
TensorBoard and a JSON-lines metrics log. Running the same call again after
a crash continues where the last checkpoint left off.
"""

import importlib.util
import json
import os
import warnings

import keras
import numpy as np

from kbert.distributed import cluster, tf_multi_worker
from kbert.pretraining.checkpointing import StopOnNaN, TrainingCheckpoint
from kbert.pretraining.dataset import count_records, pretraining_dataset

METRICS_FILE = "metrics.jsonl"


class MetricsLogger(keras.callbacks.Callback):
    """Appends `{"step": ..., "loss": ..., ...}` lines to a JSON-lines file.

    Training logs every `every` steps (running epoch means, as Keras reports
    them); validation logs at every epoch end carry `val_` names. The file
    survives restarts (it is appended to), so a resumed run continues its curve.

    Example:
    >>> logger = MetricsLogger("run/metrics.jsonl", every=50)  # callbacks=[logger]
    """

    def __init__(self, path, every=50, start_step=0):
        super().__init__()
        self.path = path
        self.every = max(1, int(every))
        self.step = start_step

    def _write(self, record):
        if not cluster.is_chief():
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a") as file:
            file.write(json.dumps(record) + "\n")

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.step % self.every == 0:
            self._write({"step": self.step, **_floats(logs)})

    def on_epoch_end(self, epoch, logs=None):
        record = {k: v for k, v in _floats(logs).items() if k.startswith("val_")}
        if record:
            self._write({"step": self.step, "epoch": epoch + 1, **record})


def read_metrics(path):
    """The records of a `MetricsLogger` file, as a list of dicts.

    Example:
    >>> with open("metrics.jsonl", "w") as file:
    ...     print('{"step": 50, "loss": 9.1}', file=file)
    >>> read_metrics("metrics.jsonl")
    [{'step': 50, 'loss': 9.1}]
    """
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def pretrain(
    pretrainer,
    data,
    total_steps,
    batch_size=32,
    steps_per_epoch=None,
    validation_data=None,
    validation_steps=None,
    run_dir=None,
    save_every=1000,
    log_every=50,
    seed=0,
    callbacks=(),
    verbose="auto",
):
    """Pretrains `pretrainer` for `total_steps` batches; resumable.

    Args:
        pretrainer: a compiled `kbert.BertPretrainer` (e.g. with
            `bert_optimizer`).
        data: a data directory/files for `pretraining_dataset`, or a function
            `start_step -> tf.data.Dataset` of `(x, y, sample_weight)` that
            repeats and starts at `start_step`.
        validation_data: a dataset evaluated at the end of every epoch.
        run_dir: holds `checkpoints/` (every `save_every` steps),
            `tensorboard/` and `metrics.jsonl`. When it has a checkpoint, the
            run resumes from it. None: no checkpoints, no logs. In a
            multi-process job process 0 alone writes them, and `run_dir`
            must be on a file system all processes see.

    In a multi-process job (`kbert.distributed.cluster.join_cluster` and
    `distribution.data_parallel()` on JAX, or a pretrainer built in
    `distribution.multi_worker_mirrored_strategy()`'s scope), every process
    runs `pretrain` with the same arguments and reads its own shard of `data` (see
    `pretraining_dataset`'s `num_shards`); `batch_size` is the global batch.
    A `data` function must then return this process's shard itself.

    Returns a dict of per-epoch metric lists (as `History.history`).

    Example:
    >>> from kbert.optimization.optimizers import bert_optimizer
    >>> pretrainer = kbert.BertPretrainer(backbone, compile=False)
    >>> pretrainer.compile(optimizer=bert_optimizer(total_steps=2))
    >>> history = pretrain(pretrainer, pretraining_data, total_steps=2, batch_size=2,
    ...                    run_dir="run", log_every=1, verbose=0)
    >>> sorted(os.listdir("run"))
    ['checkpoints', 'metrics.jsonl', 'tensorboard']
    """
    if callable(data):
        make_dataset = data
        steps_per_epoch = steps_per_epoch or total_steps
    else:
        num_shards, shard_index = cluster.input_shard()

        def make_dataset(start_step):
            return pretraining_dataset(
                data,
                batch_size,
                seed=seed,
                start_step=start_step,
                num_shards=num_shards,
                shard_index=shard_index,
            )

        steps_per_epoch = steps_per_epoch or max(1, count_records(data) // batch_size)
    steps_per_epoch = min(steps_per_epoch, total_steps)

    strategy = getattr(pretrainer, "distribute_strategy", None)
    if tf_multi_worker.is_multi_worker(strategy):
        worker_dataset = make_dataset

        def make_dataset(start_step):
            return tf_multi_worker.per_worker_dataset(strategy, worker_dataset(start_step))

    step = 0
    extra = []
    checkpoint = None
    if run_dir is not None:
        checkpoint = TrainingCheckpoint(os.path.join(run_dir, "checkpoints"), save_every)
        step = checkpoint.restore(pretrainer)
        extra = [
            MetricsLogger(os.path.join(run_dir, METRICS_FILE), log_every, start_step=step)
        ]
        chief = cluster.is_chief()  # the others write no logs
        if chief and importlib.util.find_spec("tensorboard") is not None:
            extra.append(
                keras.callbacks.TensorBoard(
                    os.path.join(run_dir, "tensorboard"), update_freq=log_every
                )
            )
        elif chief:
            warnings.warn(
                "No TensorBoard logs: the `tensorboard` package is not installed "
                "(pip install tensorboard).",
                stacklevel=2,
            )
    all_callbacks = [StopOnNaN(checkpoint), *([checkpoint] if checkpoint else []), *extra]
    all_callbacks += list(callbacks)

    history = {}
    while step < total_steps:
        epoch, offset = divmod(step, steps_per_epoch)
        # One call runs whole epochs of equal length; a partial first (resumed)
        # or last epoch gets a call of its own.
        epoch_steps = min(steps_per_epoch - offset, total_steps - step)
        epochs = epoch + 1
        if offset == 0 and epoch_steps == steps_per_epoch:
            epochs = step // steps_per_epoch + (total_steps - step) // steps_per_epoch
        result = pretrainer.fit(
            make_dataset(step),
            initial_epoch=epoch,
            epochs=epochs,
            steps_per_epoch=epoch_steps,
            validation_data=validation_data,
            validation_steps=validation_steps,
            callbacks=all_callbacks,
            verbose=verbose,
            shuffle=False,  # the dataset shuffles itself, reproducibly
        )
        for key, values in result.history.items():
            history.setdefault(key, []).extend(values)
        step += (epochs - epoch) * epoch_steps
        if pretrainer.stop_training:
            break
    return history


def _floats(logs):
    result = {}
    for key, value in (logs or {}).items():
        try:
            result[key] = float(np.asarray(value))
        except (TypeError, ValueError):
            pass
    return result
