"""One TensorFlow-only process per Python process, kept for the SavedModels it runs.

`serving_process.py --serve` imports TensorFlow and tensorflow-text's ops
once (6.5-6.8 s of a fresh process's 10.0-10.7 s on an Intel Xeon with AMX,
2 cores, 2026-12-03) and then loads each job's SavedModel anew, as TF Serving loads
model after model in one server. The process is kept as
`kbert.utils.kept_process` keeps one: started on first use, ended after
`IDLE_SECONDS` without a job, with this process, or at its exit.

Example:
>>> from kbert.export.saved_model.runner import run_saved_model
>>> runs = [("serve_token_ids", token_inputs)]
>>> _ = run_saved_model(saved_model_dir, runs)
>>> pid = serving_process_id()
>>> _ = run_saved_model(saved_model_dir, runs)
>>> serving_process_id() == pid != os.getpid()
True
"""

import os

from kbert.export.saved_model import serving_process
from kbert.utils.kept_process import KeptProcess, KeptProcessError

SERVING_SCRIPT = serving_process.__file__
IDLE_SECONDS = 300


class ServingProcessError(KeptProcessError):
    """The serving process ran a job and reported its traceback, or died."""


# The kept child's command line after `python` (KeptProcess appends the idle
# seconds).
SERVE_ARGUMENTS = (SERVING_SCRIPT, "--serve")
SERVING = KeptProcess(
    SERVE_ARGUMENTS,
    done=serving_process.DONE,
    idle_seconds=IDLE_SECONDS,
    error=ServingProcessError,
)


def serving_process_id():
    """The pid of this process's kept serving process, or None."""
    return SERVING.pid()


def run_serving_job(job_path):
    """Runs the job file at `job_path` (see `serving_process.py`) in the kept
    TensorFlow-only process; raises `ServingProcessError` with the process's
    traceback (or, if it died, the end of its error output)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BACKEND", None)
    SERVING.run(job_path, env)
