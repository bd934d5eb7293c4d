"""One TensorFlow-only process per Python process, kept for the SavedModels it runs.

`serving_process.py --serve` imports TensorFlow and tensorflow-text's ops
once (6.5-6.8 s of a fresh process's 10.0-10.7 s on an Intel Xeon with AMX,
2 cores, 2026-12-03) and then loads each job's SavedModel anew, as TF Serving loads
model after model in one server. The process is started on first use, ends
after `IDLE_SECONDS` without a job (a new one starts on the next), with this
process, or at its exit, and is never shared with a forked child.

Example:
>>> from kbert.export.saved_model.runner import run_saved_model
>>> runs = [("serve_token_ids", token_inputs)]
>>> _ = run_saved_model(saved_model_dir, runs)
>>> pid = serving_process_id()
>>> _ = run_saved_model(saved_model_dir, runs)
>>> serving_process_id() == pid != os.getpid()
True
"""

import atexit
import json
import os
import subprocess
import tempfile
import threading
import time

from kbert.export.saved_model import serving_process
from kbert.utils.child_process import start_child

SERVING_SCRIPT = serving_process.__file__
IDLE_SECONDS = 300
# The runner stops using a process this much before it would end by itself.
IDLE_MARGIN = 20
DONE = serving_process.DONE

_lock = threading.Lock()
_worker = None


class ServingProcessError(RuntimeError):
    """The serving process ran a job and reported its traceback, or died."""


def serving_process_id():
    """The pid of this process's kept serving process, or None."""
    with _lock:
        usable = _worker is not None and _worker.usable()
        return _worker.process.pid if usable else None


def run_serving_job(job_path):
    """Runs the job file at `job_path` (see `serving_process.py`) in the kept
    TensorFlow-only process; raises `ServingProcessError` with the process's
    traceback (or, if it died, the end of its error output)."""
    global _worker
    with _lock:
        while True:
            fresh = _worker is None or not _worker.usable()
            if fresh:
                if _worker is not None:
                    _worker.close()
                _worker = _Worker()
            try:
                return _worker.run(job_path)
            except _Died:
                _worker.close()
                _worker = None
                if fresh:
                    raise
            # It ended as it was given the job (its idle end, or the end of
            # the thread that started it): once more, in a new process.


class _Died(ServingProcessError):
    pass


class _Worker:
    def __init__(self):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        env.pop("KERAS_BACKEND", None)
        self.pid = os.getpid()
        self.errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = start_child(
            [SERVING_SCRIPT, "--serve", str(IDLE_SECONDS)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            encoding="utf-8",
        )
        self.last_used = time.monotonic()

    def usable(self):
        return (
            self.pid == os.getpid()
            and self.process.poll() is None
            and time.monotonic() - self.last_used < IDLE_SECONDS - IDLE_MARGIN
        )

    def run(self, job_path):
        try:
            self.process.stdin.write(os.path.abspath(job_path) + "\n")
            self.process.stdin.flush()
            for line in self.process.stdout:
                if line.startswith(DONE):
                    answer = json.loads(line[len(DONE) :])
                    break
            else:
                raise _Died(self._error_output())
        except OSError:  # a broken pipe: it had ended
            raise _Died(self._error_output()) from None
        finally:
            self.last_used = time.monotonic()
        if not answer["ok"]:
            raise ServingProcessError(answer["error"])

    def _error_output(self):
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # its output closed, yet it runs on
            self.process.kill()
            self.process.wait()
        self.errors.seek(0)
        return (
            f"the serving process ended (exit status {self.process.returncode}):\n"
            + self.errors.read()[-3000:]
        )

    def close(self):
        if self.pid == os.getpid() and self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.errors.close()


@atexit.register
def _close_at_exit():
    if _worker is not None:
        _worker.close()
