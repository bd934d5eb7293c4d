"""The kept TensorFlow-only serving process: reused across SavedModels, a
failed job reported while it goes on, and a process that ended (killed, or
idle) replaced by a new one."""

import os
import signal

import numpy as np
import pytest

from kbert.export.saved_model import serving_process, serving_worker
from kbert.export.saved_model.runner import run_saved_model
from kbert.utils import kept_process

# The serving process is TensorFlow-only, whatever the backend under test.
pytestmark = pytest.mark.backend_independent


@pytest.fixture(scope="module")
def doubler(tmp_path_factory):
    """A SavedModel whose `serving_default` doubles its float input."""
    import tensorflow as tf

    class Doubler(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def double(self, x):
            return {"y": 2 * x}

    module = Doubler()
    path = str(tmp_path_factory.mktemp("doubler") / "1")
    tf.saved_model.save(module, path, signatures={"serving_default": module.double})
    return path


def kept_serving_process(idle_seconds):
    return kept_process.KeptProcess(
        serving_worker.SERVE_ARGUMENTS,
        done=serving_process.DONE,
        idle_seconds=idle_seconds,
        error=serving_worker.ServingProcessError,
    )


@pytest.fixture
def new_worker(monkeypatch):
    """A kept process of this test's own, closed after it."""
    monkeypatch.setattr(serving_worker, "SERVING", kept_serving_process(300))
    yield
    serving_worker.SERVING.close()


def run(path, value):
    (outputs,), _, modules = run_saved_model(path, [("serving_default", {"x": value})])
    return outputs["y"], modules


def test_one_process_runs_job_after_job_and_goes_on_after_a_failed_one(doubler, new_worker):
    assert serving_worker.serving_process_id() is None
    y, modules = run(doubler, np.array([1.5], "float32"))
    np.testing.assert_array_equal(y, [3.0])
    assert "tensorflow" in modules and "keras" not in modules and "kbert" not in modules
    pid = serving_worker.serving_process_id()
    assert pid not in (None, os.getpid())
    with pytest.raises(
        RuntimeError,
        match=r"(?s)Loading .*missing.* failed:.*SavedModel file does not exist",
    ):
        run(os.path.join(os.path.dirname(doubler), "missing"), np.array([1.0], "float32"))
    np.testing.assert_array_equal(run(doubler, np.array([4.0], "float32"))[0], [8.0])
    assert serving_worker.serving_process_id() == pid


def test_a_killed_process_is_replaced(doubler, new_worker):
    run(doubler, np.array([1.0], "float32"))
    pid = serving_worker.serving_process_id()
    os.kill(pid, signal.SIGKILL)
    serving_worker.SERVING._child.process.wait(timeout=30)
    np.testing.assert_array_equal(run(doubler, np.array([2.0], "float32"))[0], [4.0])
    assert serving_worker.serving_process_id() not in (None, pid)


def test_an_idle_process_ends_and_a_job_given_as_it_ends_runs_in_a_new_one(
    doubler, new_worker, monkeypatch
):
    monkeypatch.setattr(serving_worker, "SERVING", kept_serving_process(1))
    run(doubler, np.array([1.0], "float32"))
    first = serving_worker.SERVING._child.process
    first.wait(timeout=60)  # it ended by itself, a second after its job
    # The race: the runner took it for alive just before it ended.
    monkeypatch.setattr(kept_process._Child, "usable", lambda self, env: True)
    np.testing.assert_array_equal(run(doubler, np.array([3.0], "float32"))[0], [6.0])
    assert serving_worker.SERVING._child.process.pid != first.pid
