"""Exports that need TensorFlow, run from a JAX or PyTorch session.

A SavedModel or a TFLite file is a TensorFlow graph: it must be traced with
Keras on the TensorFlow backend, which is fixed per process. From another
backend, the model is saved as a `.keras` file (config, weights, the
preprocessor's vocabulary), a subprocess with `KERAS_BACKEND=tensorflow`
loads and exports it (verifying the artifact against the TensorFlow-backend
model), and this process then checks the artifact against the original
model too. Both checks use the exporter's tolerance; the artifact is renamed
into place only after both pass.
"""

import json
import os
import subprocess
import sys
import tempfile

import keras


def export_on_tensorflow(model, exporter, path, **options):
    """Runs `kbert.export.<exporter>(model, path, **options)` on TensorFlow.

    Returns the export record of the child, with `cross_backend` added: the
    check against this process's model.

    Example:
    >>> # KERAS_BACKEND=jax
    >>> kbert.export.saved_model(classifier, "out/classifier/1")
    """
    from kbert.utils.atomic import atomic_directory, atomic_file

    target = atomic_directory if exporter == "saved_model" else atomic_file
    with tempfile.TemporaryDirectory(prefix="kbert-export-") as work:
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
            result = subprocess.run(
                [sys.executable, "-m", "kbert.export.on_tensorflow", job_path],
                env=env,
                capture_output=True,
                text=True,
            )
            if result.returncode:
                raise _child_error(result.stderr)
            with open(job["record"], encoding="utf-8") as file:
                export_record = json.load(file)
            export_record["cross_backend"] = _cross_check(model, exporter, tmp, options)
    return export_record


def _child_error(stderr):
    from kbert.export.checks import ExportVerificationError

    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    error = ExportVerificationError if "ExportVerificationError" in last else RuntimeError
    return error(f"The TensorFlow-backend export failed:\n{stderr[-4000:]}")


def _cross_check(model, exporter, path, options):
    """The artifact against this process's (JAX or torch) model."""
    from kbert.export.spec import export_spec

    spec = export_spec(model, options.get("text_pairs"))
    if exporter == "saved_model":
        from kbert.export.saved_model import verify_saved_model

        # The child has run it in a fresh TensorFlow-only process already.
        return verify_saved_model(model, spec, path, fresh_process=False)
    from kbert.export.tflite import verify_tflite

    return verify_tflite(model, spec, path, options)


def _main(job_path):
    import kbert.export as export
    import kbert.preprocessing  # noqa: F401 - registers the preprocessor classes

    with open(job_path, encoding="utf-8") as file:
        job = json.load(file)
    model = keras.saving.load_model(job["keras_file"], compile=False)
    exporter = getattr(export, job["exporter"])
    export_record = exporter(model, job["path"], **job["options"])
    export_record["backend"] = f"tensorflow (exported from {job['from_backend']})"
    with open(job["record"], "w", encoding="utf-8") as file:
        json.dump(export_record, file)


if __name__ == "__main__":
    _main(sys.argv[1])
