"""Ray Data as kbert's engine for data-parallel work: an ordered map over actors.

`ordered_map(make_worker, items, engine="ray", workers=N)` runs
`make_worker()` once per worker process (an actor of a Ray Data actor pool:
load a model or a tokenizer there, once) and the function it returns on every
item, and yields the results in item order. Each item is a task with a
deterministic position: Ray retries a task whose worker raised or died
(`max_task_retries`, `actor_task_retry_on_errors`) and keeps one result per
item, so a retry never duplicates rows. `engine="local"` runs the same worker
in this process, the reference the Ray runs are checked against.

Without `address`, a local Ray instance is started on 127.0.0.1 with
`workers` CPUs and no dashboard, and shut down afterwards; its workers import
the kbert this process imported and use its Keras backend. With `address`
("ray://head:10001", "auto", "head:6379") the job joins that cluster; extra
`ray.init` arguments go through `init_args` (e.g. a `runtime_env`). This
module imports Ray only when a Ray run starts, and nothing heavy at its top
(command-line declarations read `ENGINES`).

`KBERT_RAY_FAIL_ONCE=<item index>:<marker file>` makes the worker that
receives that item raise once (when the marker file does not exist yet; it
is created first): tests use it to check that a failed task is retried.
"""

import contextlib
import logging
import os
import pathlib
import pickle
import warnings

from kbert.utils.quiet import logger_level

ENGINES = ("local", "ray")
INSTALL_HINT = "pip install kbert-keras[ray]"
FAIL_ONCE_VARIABLE = "KBERT_RAY_FAIL_ONCE"
# A task whose worker raised or died runs again, on a new worker if it died.
TASK_RETRIES = 3
# The kbert this process imported: local Ray workers import the same one.
_SOURCE_ROOT = str(pathlib.Path(__file__).resolve().parents[2])


def check_engine(engine, workers=1):
    """Refuses an unknown engine or a worker count below 1.

    Example:
    >>> check_engine("ray", 2)
    >>> check_engine("spark")
    Traceback (most recent call last):
    ...
    ValueError: Unknown engine 'spark'; use one of ('local', 'ray').
    """
    if engine not in ENGINES:
        raise ValueError(f"Unknown engine {engine!r}; use one of {ENGINES}.")
    if int(workers) < 1:
        raise ValueError(f"workers must be at least 1; got {workers}.")


def import_ray():
    """`ray` with Ray Data, or an ImportError that says which install fixes it."""
    try:
        import ray  # lazy: optional engine, kbert-keras[ray]
        import ray.data  # lazy: optional engine, kbert-keras[ray]
    except ImportError as error:
        raise ImportError(
            f"engine='ray' needs Ray Data, which is not installed: {INSTALL_HINT}"
        ) from error
    return ray


@contextlib.contextmanager
def ray_session(workers, address=None, init_args=None):
    """Connects to Ray for the block: a running session, the cluster at
    `address`, or a local instance on 127.0.0.1 with `workers` CPUs (shut
    down at the end; only what this call started is shut down)."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    options = {"include_dashboard": False, "configure_logging": False}
    if address:
        options["address"] = address
    else:
        path = os.pathsep.join(p for p in (_SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
        options.update(
            address="local",
            num_cpus=int(workers),
            _node_ip_address="127.0.0.1",
            # Workers inherit this process's environment (KERAS_BACKEND...).
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    options.update(init_args or {})
    ray.init(**options)
    try:
        yield ray
    finally:
        ray.shutdown()


class _Actor:
    """One worker of the pool: builds its function once, then runs items."""

    def __init__(self, make_worker):
        self.run = make_worker()

    def __call__(self, batch):
        results = []
        for index, payload in zip(batch["index"], batch["payload"]):
            _fail_once_for_tests(int(index))
            results.append(pickle.dumps(self.run(pickle.loads(payload))))
        return {"index": batch["index"], "result": results}


def _fail_once_for_tests(index):
    target, _, marker = os.environ.get(FAIL_ONCE_VARIABLE, "").partition(":")
    if target and int(target) == index and not os.path.exists(marker):
        with open(marker, "w") as file:
            file.write(f"item {index} failed once in process {os.getpid()}\n")
        raise RuntimeError(f"{FAIL_ONCE_VARIABLE}: item {index} fails once")


def ordered_map(make_worker, items, engine="ray", workers=2, address=None, init_args=None):
    """Yields `worker(item)` for each item, in order, `worker = make_worker()`
    built once per worker process.

    `make_worker` and the items travel by pickle (cloudpickle on Ray): a
    module-level class or a `functools.partial` of one, and plain data.

    Example:
    >>> list(ordered_map(lambda: str.upper, ["a", "b"], engine="local"))
    ['A', 'B']
    """
    check_engine(engine, workers)
    if engine == "local":
        return _in_this_process(make_worker, items)
    import_ray()  # fail now, not at the first result
    return _on_ray(make_worker, items, workers, address, init_args)


def _in_this_process(make_worker, items):
    worker = make_worker()
    for item in items:
        yield worker(item)


def _on_ray(make_worker, items, workers, address, init_args):
    rows = [
        {"index": index, "payload": pickle.dumps(item)} for index, item in enumerate(items)
    ]
    if not rows:
        return
    with (
        ray_session(workers, address, init_args) as ray,
        logger_level("ray.data", logging.WARNING),
    ):
        context = ray.data.DataContext.get_current()
        saved = (
            context.execution_options.preserve_order,
            context.actor_task_retry_on_errors,
            context.enable_progress_bars,
        )
        context.execution_options.preserve_order = True
        context.actor_task_retry_on_errors = True
        context.enable_progress_bars = False
        try:
            with warnings.catch_warnings():
                # Ray 2.60 deprecates remote arguments such as retries, naming no others.
                warnings.simplefilter("ignore")
                dataset = ray.data.from_items(
                    rows, override_num_blocks=len(rows)
                ).map_batches(
                    _Actor,
                    fn_constructor_args=(make_worker,),
                    batch_size=1,
                    compute=ray.data.ActorPoolStrategy(size=int(workers)),
                    num_cpus=1,
                    max_restarts=TASK_RETRIES,
                    max_task_retries=TASK_RETRIES,
                )
            expected = 0
            for row in dataset.iter_rows():
                if int(row["index"]) != expected:
                    raise RuntimeError(
                        f"Ray returned item {row['index']} where {expected} was due."
                    )
                expected += 1
                yield pickle.loads(row["result"])
            if expected != len(rows):
                raise RuntimeError(f"Ray returned {expected} of {len(rows)} results.")
        finally:
            (
                context.execution_options.preserve_order,
                context.actor_task_retry_on_errors,
                context.enable_progress_bars,
            ) = saved
