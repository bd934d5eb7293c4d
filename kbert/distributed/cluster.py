"""Joining a multi-process training job, and knowing which process this is.

A cluster launcher starts one process per host (or per accelerator) and tells
each one the job's shape, by flags or environment:

- JAX: `join_cluster(coordinator, num_processes, process_id)` (the flags
  `--coordinator host:port --num-processes N --process-id I`), or the
  variables `KERAS_DISTRIBUTION_JOB_ADDRESSES` / `_NUM_PROCESSES` /
  `_PROCESS_ID`, or `JAX_COORDINATOR_ADDRESS` / `JAX_NUM_PROCESSES` /
  `JAX_PROCESS_ID`. With `multi_process=True` and nothing else, JAX finds the
  shape itself (Cloud TPU pod slices, SLURM, Open MPI).
- TensorFlow: `TF_CONFIG`; joining creates the job's
  `tf.distribute.MultiWorkerMirroredStrategy` (`kbert.distributed.tf_multi_worker`).

Process 0 is the chief: it alone writes checkpoints, logs and models.
"""

import dataclasses
import os

import keras

from kbert.distributed import tf_multi_worker

_KERAS_ENV = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "KERAS_DISTRIBUTION_PROCESS_ID",
)
_JAX_ENV = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


@dataclasses.dataclass(frozen=True)
class ClusterSettings:
    """The shape of a job as flags and environment give it (None: not given).

    Example:
    >>> env = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "2",
    ...        "JAX_PROCESS_ID": "1"}
    >>> cluster_settings(environ=env)
    ClusterSettings(coordinator='10.0.0.1:1234', num_processes=2, process_id=1)
    """

    coordinator: str = None
    num_processes: int = None
    process_id: int = None

    @property
    def multi_process(self):
        return (
            self.coordinator is not None
            or (self.num_processes or 1) > 1
            or (self.process_id or 0) > 0
        )


def cluster_settings(coordinator=None, num_processes=None, process_id=None, environ=None):
    """Flags first, then Keras', JAX's and SLURM's variables; see the module doc.

    Example:
    >>> cluster_settings(environ={"SLURM_NTASKS": "4", "SLURM_PROCID": "3"})
    ClusterSettings(coordinator=None, num_processes=4, process_id=3)
    """
    environ = os.environ if environ is None else environ
    sources = [(coordinator, num_processes, process_id)]
    for names in (_KERAS_ENV, _JAX_ENV):
        sources.append(tuple(environ.get(name) for name in names))
    if "SLURM_JOB_ID" in environ or "SLURM_NTASKS" in environ:
        # JAX reads the coordinator from SLURM's node list itself.
        sources.append((None, environ.get("SLURM_NTASKS"), environ.get("SLURM_PROCID")))
    values = [
        next((s[i] for s in sources if s[i] not in (None, "")), None) for i in range(3)
    ]
    for i, name in ((1, "num_processes"), (2, "process_id")):
        if values[i] is not None:
            try:
                values[i] = int(values[i])
            except ValueError:
                raise ValueError(f"{name} must be an integer; got {values[i]!r}.") from None
    settings = ClusterSettings(*values)
    if (
        settings.num_processes is not None
        and settings.process_id is not None
        and not 0 <= settings.process_id < settings.num_processes
    ):
        raise ValueError(
            f"process_id={settings.process_id} is outside 0..{settings.num_processes - 1} "
            f"(num_processes={settings.num_processes})."
        )
    if settings.coordinator is not None and ":" not in settings.coordinator.split(",")[0]:
        raise ValueError(
            f"coordinator={settings.coordinator!r} needs a port: host:port, e.g. "
            "10.0.0.1:1234."
        )
    return settings


def join_cluster(
    coordinator=None, num_processes=None, process_id=None, multi_process=False
):
    """Joins the job the arguments or the environment describe; returns its settings.

    Call it first thing, before any computation. On JAX it runs
    `keras.distribution.initialize` (once); on TensorFlow the job comes from
    `TF_CONFIG` and this creates its `MultiWorkerMirroredStrategy`
    (`tf_multi_worker.join`). A single-process run does nothing.

    Example:
    >>> join_cluster()  # no flags, no cluster environment: one process
    ClusterSettings(coordinator=None, num_processes=None, process_id=None)
    """
    settings = cluster_settings(coordinator, num_processes, process_id)
    if keras.backend.backend() == "tensorflow":
        if settings.multi_process:
            raise ValueError(
                "On TensorFlow, multi-worker jobs are described by TF_CONFIG "
                "(one address per worker; --distribution multi_worker_mirrored), "
                "not by --coordinator/--num-processes/--process-id."
            )
        workers = tf_multi_worker.tf_config_workers()
        if workers is not None and len(workers[0]) > 1:
            tf_multi_worker.join()
        return settings
    if not (settings.multi_process or multi_process):
        return settings
    if keras.backend.backend() != "jax":
        raise ValueError(
            f"Multi-process jobs run on JAX or TensorFlow; the backend is "
            f"{keras.backend.backend()!r} (set KERAS_BACKEND)."
        )
    import jax  # lazy: JAX only on the JAX backend

    if not jax.distributed.is_initialized():
        keras.distribution.initialize(
            settings.coordinator, settings.num_processes, settings.process_id
        )
    return settings


def process_count():
    """How many processes the job has (1 when not multi-process).

    Example:
    >>> process_count()
    1
    """
    if keras.backend.backend() == "jax":
        import jax  # lazy: JAX only on the JAX backend

        return jax.process_count()
    if keras.backend.backend() == "tensorflow":
        workers = tf_multi_worker.tf_config_workers()
        return len(workers[0]) if workers else 1
    return 1


def process_index():
    """This process's index in the job; 0 is the chief.

    Example:
    >>> process_index(), is_chief()
    (0, True)
    """
    if keras.backend.backend() == "jax":
        import jax  # lazy: JAX only on the JAX backend

        return jax.process_index()
    if keras.backend.backend() == "tensorflow":
        workers = tf_multi_worker.tf_config_workers()
        return workers[1] if workers else 0
    return 0


def is_chief():
    """True on process 0, which writes checkpoints, logs and models."""
    return process_index() == 0


def barrier(name, timeout_s=3600):
    """Waits until every process reaches the barrier `name` (no-op in one process).

    Uses the engine's coordination service (JAX's, or TensorFlow's in a
    `TF_CONFIG` job): no device collective, so one process may wait for long
    work of another, up to `timeout_s`.

    Example:
    >>> barrier("data written")
    """
    if keras.backend.backend() not in ("jax", "tensorflow") or process_count() == 1:
        return
    _BARRIERS[name] = _BARRIERS.get(name, 0) + 1
    barrier_id = f"kbert:{name}:{_BARRIERS[name]}"
    if keras.backend.backend() == "tensorflow":
        tf_multi_worker.join()  # the service runs once the workers are connected
        tf_multi_worker.barrier(barrier_id, timeout_s)
        return
    from jax._src import distributed  # lazy: JAX only on the JAX backend

    distributed.global_state.client.wait_at_barrier(barrier_id, int(timeout_s * 1000))


_BARRIERS = {}  # name -> times reached, so each barrier id is used once


def input_shard():
    """`(num_shards, shard_index)` of the input this process reads.

    One shard per process in a multi-process job, unless the active Keras
    distribution splits the input itself (`auto_shard_dataset`).

    Example:
    >>> input_shard()  # one process
    (1, 0)
    """
    count = process_count()
    if count == 1:
        return 1, 0
    if keras.backend.backend() == "jax":
        active = keras.distribution.distribution()
        if active is not None and active.auto_shard_dataset:
            return 1, 0
    return count, process_index()


def shard_rows(order, batch_size, num_shards, shard_index):
    """The rows shard `shard_index` reads: its slice of every global batch.

    `order` is the global order of the rows; global batch k is
    `order[k * batch_size:(k + 1) * batch_size]` and each of the `num_shards`
    processes reads `batch_size // num_shards` rows of it, so the processes'
    batches together are exactly the one-process batches. A last, partial
    global batch is left out (every process must read equal batches).

    Example:
    >>> shard_rows(list(range(10)), batch_size=4, num_shards=2, shard_index=1)
    [2, 3, 6, 7]
    """
    if batch_size % num_shards:
        raise ValueError(
            f"The global batch size {batch_size} does not split over "
            f"{num_shards} processes; use a multiple of {num_shards}."
        )
    local = batch_size // num_shards
    rows = []
    for start in range(0, len(order) - batch_size + 1, batch_size):
        begin = start + shard_index * local
        rows.extend(order[begin : begin + local])
    return rows
