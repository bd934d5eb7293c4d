"""TensorFlow multi-worker jobs: `tf.distribute.MultiWorkerMirroredStrategy`.

`TF_CONFIG` describes the job (one entry per worker, `task` names this
one); `join()` connects the workers and returns the job's strategy, once
per process and before any other TensorFlow work, as TensorFlow requires.
Build and compile models inside `strategy.scope()`; feed `fit` datasets
through `per_worker_dataset`, because kbert's inputs are already sharded per
process (TensorFlow's own auto-sharding would split them again).

Keras 3's `fit` does not run under this strategy as released
(keras-team/keras#20585): it all-reduces the first input batch to learn its
shapes and reduces scalar logs along axis 0. `join()` corrects both, for
multi-worker strategies only.
"""

import json
import os

import keras

_STRATEGY = []  # the job's strategy, once joined


def tf_config_workers(environ=None):
    """(worker addresses, this worker's index) from `TF_CONFIG`, or None.

    Example:
    >>> config = {"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
    ...           "task": {"type": "worker", "index": 1}}
    >>> tf_config_workers({"TF_CONFIG": json.dumps(config)})
    (['10.0.0.1:2222', '10.0.0.2:2222'], 1)
    """
    raw = (os.environ if environ is None else environ).get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        workers = list(cluster.get("chief", [])) + list(cluster.get("worker", []))
        index = int(task["index"]) + (
            len(cluster.get("chief", [])) if task["type"] == "worker" else 0
        )
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"TF_CONFIG is not a cluster description ({error}): {raw[:200]!r}"
        ) from None
    if not 0 <= index < len(workers):
        raise ValueError(
            f"TF_CONFIG: this task ({task['type']} {task['index']}) is not one of the "
            f"cluster's {len(workers)} workers."
        )
    return workers, index


def join():
    """The job's `MultiWorkerMirroredStrategy`, created on first call.

    Example:
    >>> # Needs KERAS_BACKEND=tensorflow and a TF_CONFIG of two or more workers.
    >>> strategy = join()  # doctest: +SKIP
    >>> with strategy.scope():  # doctest: +SKIP
    ...     pretrainer = kbert.BertPretrainer(backbone)
    """
    if _STRATEGY:
        return _STRATEGY[0]
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "MultiWorkerMirroredStrategy needs the TensorFlow backend "
            "(KERAS_BACKEND=tensorflow); on JAX use kbert.distributed.cluster.join_cluster."
        )
    if tf_config_workers() is None:
        raise ValueError(
            "A TensorFlow multi-worker job is described by TF_CONFIG; it is not set. "
            'E.g. TF_CONFIG=\'{"cluster": {"worker": ["host0:2222", "host1:2222"]}, '
            '"task": {"type": "worker", "index": 0}}\'.'
        )
    import tensorflow as tf  # lazy: a multi-worker strategy is TensorFlow's

    _correct_keras_fit()
    _STRATEGY.append(tf.distribute.MultiWorkerMirroredStrategy())
    return _STRATEGY[0]


def joined_strategy():
    """The strategy `join()` made in this process, or None."""
    return _STRATEGY[0] if _STRATEGY else None


def barrier(name, timeout_s):
    """Waits for every worker at `name` through TensorFlow's coordination service."""
    from tensorflow.python.eager import context  # lazy: TensorFlow's service

    context.context().wait_at_barrier(name, int(timeout_s * 1000))


def is_multi_worker(strategy):
    """True for a strategy that spans processes."""
    extended = getattr(strategy, "extended", None)
    return bool(getattr(extended, "_in_multi_worker_mode", lambda: False)())


def per_worker_dataset(strategy, dataset):
    """`dataset` (this worker's batches) as `fit` input, fed as it is.

    Each worker's batches are split over its own replicas (one on a CPU
    host); nothing is re-sharded across workers.
    """
    local_replicas = len(strategy.extended.worker_devices)

    def worker_input(context):
        if local_replicas == 1:
            return dataset
        batch = keras.tree.flatten(dataset.element_spec)[0].shape[0]
        if batch is None or batch % local_replicas:
            raise ValueError(
                f"Each worker's batches ({batch} rows) must split evenly over its "
                f"{local_replicas} replicas."
            )
        return dataset.rebatch(batch // local_replicas, drop_remainder=True)

    return strategy.distribute_datasets_from_function(worker_input)


def _correct_keras_fit():
    """Works around keras-team/keras#20585 (see the module doc)."""
    from keras.src.backend.tensorflow import trainer  # lazy: TensorFlow's trainer

    if getattr(trainer, "_kbert_multi_worker", False):
        return
    trainer._kbert_multi_worker = True
    reduce_per_replica = trainer.reduce_per_replica
    maybe_symbolic_build = trainer.TensorFlowTrainer._maybe_symbolic_build

    def reduce_logs(values, strategy, reduction):
        if reduction in ("auto", "mean") and is_multi_worker(strategy):
            return keras.tree.map_structure(
                lambda value: strategy.reduce("MEAN", value, axis=None), values
            )
        return reduce_per_replica(values, strategy, reduction)

    def build_from_one_replica(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if iterator is not None and is_multi_worker(strategy):
            _, _, batches = next(iter(iterator))
            data_batch = keras.tree.map_structure(
                lambda value: strategy.experimental_local_results(value)[0],
                next(batches),
            )
            iterator = None
        return maybe_symbolic_build(self, iterator=iterator, data_batch=data_batch)

    trainer.reduce_per_replica = reduce_logs
    trainer.TensorFlowTrainer._maybe_symbolic_build = build_from_one_replica
