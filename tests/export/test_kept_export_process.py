"""The TensorFlow process that JAX and PyTorch exports run in is kept: the
exports of a session share it, a failed job is reported while it goes on,
and a changed environment gets a new one."""

import os

import keras
import pytest

import kbert
import kbert.export
from kbert.export import on_tensorflow
from kbert.utils.kept_process import KeptProcess
from tests.export.export_helpers import tiny_model

pytestmark = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow",
    reason="TensorFlow exports in its own process",
)


def refuse(model, path, **options):
    """An exporter that refuses, run in the kept process by the test below."""
    raise ValueError(f"{type(model).__name__} refused in the TensorFlow process")


@pytest.fixture
def export_process(monkeypatch):
    """A kept process of this test's own, closed after it."""
    kept = KeptProcess(
        on_tensorflow.SERVE_ARGUMENTS,
        done=on_tensorflow.DONE,
        idle_seconds=on_tensorflow.IDLE_SECONDS,
    )
    monkeypatch.setattr(on_tensorflow, "EXPORT_PROCESS", kept)
    yield kept
    kept.close()


def refused_export(model, path):
    with pytest.raises(
        ValueError, match="^BertClassifier refused in the TensorFlow process"
    ):
        on_tensorflow.export_on_tensorflow(
            model,
            "tests.export.test_kept_export_process:refuse",
            str(path),
            cross_check=lambda artifact: pytest.fail("a refused export was cross-checked"),
        )
    assert not path.exists()


def test_exports_share_one_kept_tensorflow_process(tmp_path, export_process, monkeypatch):
    model = tiny_model(num_classes=2)
    assert export_process.pid() is None
    # A job that fails is reported with the exporter's own words, nothing is
    # written, and the same process runs the next export.
    refused_export(model, tmp_path / "refused.tflite")
    pid = export_process.pid()
    assert pid not in (None, os.getpid())
    record = kbert.export.tflite(model, str(tmp_path / "model.tflite"))
    assert record["backend"] == f"tensorflow (exported from {keras.backend.backend()})"
    assert export_process.pid() == pid

    # The process took this one's environment when it started: a changed one
    # gets a new process, which sees the change.
    monkeypatch.setenv("KBERT_TEST_ENVIRONMENT", "changed")
    refused_export(model, tmp_path / "refused_again.tflite")
    assert export_process.pid() not in (None, pid)
    with open(f"/proc/{export_process.pid()}/environ", "rb") as file:
        assert b"KBERT_TEST_ENVIRONMENT=changed" in file.read().split(b"\0")
