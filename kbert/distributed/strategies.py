"""Scaling pretraining over devices with existing engines.

JAX: Keras' distribution API. `data_parallel()` replicates the model and
splits each batch over all devices; `model_parallel()` lays the devices out
as a (batch, model) mesh and shards the encoder's kernels over the model
axis with `bert_layout_map` (Megatron style: query/key/value and
intermediate column-wise, attention_output and output row-wise).
TensorFlow: `mirrored_strategy()`, a `tf.distribute.MirroredStrategy`, and
`multi_worker_mirrored_strategy()` for jobs of several processes (`TF_CONFIG`).
See `kbert/pretraining/README.md` for launching on GPU and TPU hosts.
"""

import keras

from kbert.distributed import tf_multi_worker

# Column-parallel kernels split their output features, row-parallel ones their
# input features, so the pair around each nonlinearity needs no gather between.
_COLUMN_PARALLEL = r"transformer_layer_\d+/(query|key|value|intermediate)/"
_ROW_PARALLEL = r"transformer_layer_\d+/(attention_output|output)/kernel"


def bert_layout_map(device_mesh, model_axis="model"):
    """A `keras.distribution.LayoutMap` sharding BERT's encoder over `model_axis`.

    Matches variable paths such as `transformer_layer_0/query/kernel`; all
    other variables (embeddings, LayerNorm, heads) are replicated. Hidden and
    intermediate sizes must divide by the model axis size.

    Example:
    >>> devices = keras.distribution.list_devices()[:1]  # (2, 4) on 8 devices
    >>> mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"), devices)
    >>> layout_map = bert_layout_map(mesh)
    >>> layout_map["transformer_layer_3/intermediate/kernel"].axes
    (None, 'model')
    """
    layout_map = keras.distribution.LayoutMap(device_mesh)
    layout_map[_COLUMN_PARALLEL + "kernel"] = (None, model_axis)
    layout_map[_COLUMN_PARALLEL + "bias"] = (model_axis,)
    layout_map[_ROW_PARALLEL] = (model_axis, None)
    return layout_map


def data_parallel(devices=None):
    """`keras.distribution.DataParallel` over `devices` (default: all).

    Set it before building the model; batches are split over devices. In a
    multi-process job (`kbert.distributed.cluster.join_cluster`) the devices are
    those of all processes, and each process feeds its own share of every
    global batch: kbert's datasets shard themselves per process
    (`pretraining_dataset(num_shards=...)`), so Keras' own re-sharding of
    the input (`auto_shard_dataset`) is turned off.

    Example:
    >>> keras.distribution.set_distribution(data_parallel())
    >>> pretrainer = kbert.BertPretrainer(kbert.BertBackbone(**backbone.get_config()))
    """
    _require_jax("DataParallel")
    devices = devices or keras.distribution.list_devices()
    distribution = keras.distribution.DataParallel(devices=devices)
    distribution.auto_shard_dataset = False
    return distribution


def model_parallel(model_parallel_size=2, devices=None):
    """`keras.distribution.ModelParallel` on a (batch, model) mesh.

    `model_parallel_size` devices share each replica's kernels (see
    `bert_layout_map`); the remaining factor is data parallel. In a
    multi-process job the mesh spans the devices of all processes; Keras
    splits each global batch over the processes (`auto_shard_dataset`).

    Example:
    >>> distribution = model_parallel(1)  # model_parallel(4) on 8 devices: a 2 x 4 mesh
    >>> distribution.device_mesh.axis_names
    ('batch', 'model')
    """
    _require_jax("ModelParallel")
    devices = devices or keras.distribution.list_devices()
    if len(devices) % model_parallel_size:
        raise ValueError(
            f"{len(devices)} devices do not split into groups of "
            f"model_parallel_size={model_parallel_size}."
        )
    mesh = keras.distribution.DeviceMesh(
        (len(devices) // model_parallel_size, model_parallel_size),
        ("batch", "model"),
        devices=devices,
    )
    return keras.distribution.ModelParallel(
        layout_map=bert_layout_map(mesh), batch_dim_name="batch"
    )


def mirrored_strategy(devices=None):
    """A `tf.distribute.MirroredStrategy` (TensorFlow backend only).

    Build and compile the model inside `strategy.scope()`; `fit` then splits
    each global batch over the replicas. The MLM loss is normalized by the
    mask weights of each replica's share, as the original BERT did per TPU
    core; the gradients are averaged over replicas.

    Example:
    >>> # The examples run on JAX; these two lines need KERAS_BACKEND=tensorflow.
    >>> strategy = mirrored_strategy()  # doctest: +SKIP
    >>> with strategy.scope():  # doctest: +SKIP
    ...     pretrainer = kbert.BertPretrainer(backbone)
    """
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "MirroredStrategy needs the TensorFlow backend (KERAS_BACKEND=tensorflow); "
            "on JAX use data_parallel() or model_parallel()."
        )
    import tensorflow as tf  # lazy: a mirrored strategy is TensorFlow's

    return tf.distribute.MirroredStrategy(devices=devices)


def multi_worker_mirrored_strategy():
    """The job's `tf.distribute.MultiWorkerMirroredStrategy` (TensorFlow backend).

    Every worker runs the same program with its own `TF_CONFIG`; build and
    compile the model inside `strategy.scope()`. kbert's training loops feed
    each worker its own shard of every global batch (see
    `kbert.distributed.tf_multi_worker`); process 0 writes checkpoints and logs.

    Example:
    >>> # Needs KERAS_BACKEND=tensorflow and TF_CONFIG naming two or more workers.
    >>> strategy = multi_worker_mirrored_strategy()  # doctest: +SKIP
    >>> with strategy.scope():  # doctest: +SKIP
    ...     pretrainer = kbert.BertPretrainer(backbone)
    """
    return tf_multi_worker.join()


def job_data_parallel():
    """Data parallel over every process of a multi-process job.

    On TensorFlow returns the job's `multi_worker_mirrored_strategy()` (build
    the model in its scope); on JAX sets `data_parallel()` and returns None.
    """
    if keras.backend.backend() == "tensorflow":
        return multi_worker_mirrored_strategy()
    keras.distribution.set_distribution(data_parallel())
    return None


def _require_jax(name):
    if keras.backend.backend() != "jax":
        raise ValueError(
            f"keras.distribution.{name} runs on the JAX backend (KERAS_BACKEND=jax); "
            "on TensorFlow use mirrored_strategy() or multi_worker_mirrored_strategy()."
        )
