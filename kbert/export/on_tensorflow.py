"""The one runner of exports that need TensorFlow, from a JAX or PyTorch session.

A SavedModel or a TFLite file is a TensorFlow graph: it must be traced with
Keras on the TensorFlow backend, which is fixed per process. From another
backend, the model is saved as a `.keras` file (config, weights, the
preprocessor's vocabulary), a subprocess with `KERAS_BACKEND=tensorflow`
loads it and calls the exporter named by its import path (which verifies the
artifact against the TensorFlow-backend model), and this process then checks
the artifact against the original model with the exporter's `cross_check`.
The artifact is renamed into place only after both pass. Exporters call
this module; it imports none of them.

The TensorFlow process is kept for the next export (`kbert.utils.
kept_process`; with it the SavedModel serving process it verifies with):
importing TensorFlow and kbert there took 5-6 s of each export, and a new
serving process 6-7 s more.
"""

import json
import os
import sys

import keras

from kbert.export.checks import ExportVerificationError
from kbert.export.formats import load
from kbert.presets.model_source import register_kbert_classes
from kbert.utils.atomic import atomic_directory, atomic_file
from kbert.utils.child_process import serve_jobs
from kbert.utils.kept_process import KeptProcess, KeptProcessError
from kbert.utils.owned_temps import work_directory

IDLE_SECONDS = 300
# What begins each answer line of --serve.
DONE = "kbert-export-done "
# The kept child's command line after `python` (KeptProcess appends the idle
# seconds).
SERVE_ARGUMENTS = ("-m", "kbert.export.on_tensorflow", "--serve")
EXPORT_PROCESS = KeptProcess(
    SERVE_ARGUMENTS,
    done=DONE,
    idle_seconds=IDLE_SECONDS,
)


def export_on_tensorflow(model, exporter, path, cross_check, directory=False, **options):
    """Runs the exporter at import path `exporter` on `model` in a TensorFlow process.

    Args:
        model: the model, on this process's backend.
        exporter: `"module:function"`, e.g.
            `"kbert.export.saved_model.exporter:saved_model"`,
            called as `function(model, path, **options)`.
        path: where the artifact appears (a directory if `directory`).
        cross_check: `cross_check(artifact_path)` checks the artifact against
            `model`; returns the summary kept as the record's `cross_backend`.
        options: JSON-serializable keyword arguments of the exporter.

    Returns:
        The export record of the child, with `cross_backend` added.

    Example:
    >>> # On JAX or torch, kbert.export.saved_model and .tflite call this for you:
    >>> record = export_on_tensorflow(  # doctest: +SKIP
    ...     classifier, "kbert.export.saved_model.exporter:saved_model", "out/classifier/1",
    ...     cross_check=lambda path: verify_saved_model(classifier, spec, path, False),
    ...     directory=True)
    """
    target = atomic_directory if directory else atomic_file
    with work_directory("export") as work:
        keras_file = os.path.join(work, "model.keras")
        model.save(keras_file)
        with target(path) as tmp:
            job = {
                "exporter": exporter,
                "keras_file": keras_file,
                "path": tmp,
                "options": options,
                "record": os.path.join(work, "record.json"),
                "from_backend": keras.backend.backend(),
            }
            job_path = os.path.join(work, "job.json")
            with open(job_path, "w", encoding="utf-8") as file:
                json.dump(job, file)
            env = dict(os.environ, KERAS_BACKEND="tensorflow")
            env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            try:
                EXPORT_PROCESS.run(job_path, env)
            except KeptProcessError as error:
                raise _child_error(str(error)) from None
            with open(job["record"], encoding="utf-8") as file:
                export_record = json.load(file)
            export_record["cross_backend"] = cross_check(tmp)
    return export_record


def _child_error(output):
    """The exception for the child's traceback (or its error output)."""
    last = output.strip().splitlines()[-1] if output.strip() else ""
    if last.startswith("ValueError: "):  # a refused argument: the exporter's own words
        return ValueError(last[len("ValueError: ") :])
    error = ExportVerificationError if "ExportVerificationError" in last else RuntimeError
    return error(f"The TensorFlow-backend export failed:\n{output[-4000:]}")


def run_job(job_path):
    """Runs one export job file (in the TensorFlow process)."""
    try:
        _export(job_path)
    finally:
        keras.backend.clear_session()  # the next job starts as a new process would


def _export(job_path):
    with open(job_path, encoding="utf-8") as file:
        job = json.load(file)
    register_kbert_classes()
    model = keras.saving.load_model(job["keras_file"], compile=False)
    export_record = load(job["exporter"])(model, job["path"], **job["options"])
    export_record["backend"] = f"tensorflow (exported from {job['from_backend']})"
    with open(job["record"], "w", encoding="utf-8") as file:
        json.dump(export_record, file)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve_jobs(run_job, DONE, float(sys.argv[2]))
    else:
        run_job(sys.argv[1])
