"""`kbert pretrain` and `kbert finetune` started as users start them on a
cluster: two `python -m kbert.cli` processes on loopback with
`--coordinator 127.0.0.1:PORT --num-processes 2 --process-id I` (JAX's flags;
TensorFlow reads TF_CONFIG, which tests/distributed/test_multiprocess.py
covers), against the same command in one process.

Pretraining: the two-process job's global batches are its two shards'
batches together, not the one-process run's batches (exact equality on the
same global batches is test_multiprocess's): here the same data, steps and
held-out set, and an eval loss within 1% of the one-process run's.
Fine-tuning (the classifier head's dropout draws other masks per process,
so no equality with one process): the job runs every epoch, process 0 alone
reports and writes the outputs.
"""

import json
import os
import subprocess
import sys
import time

import keras
import pytest

from tests.distributed.processes import ROOT, free_port
from tests.pretraining.pretraining_helpers import write_corpus

pytestmark = [
    pytest.mark.whole_machine,
    pytest.mark.skipif(
        keras.backend.backend() != "jax",
        reason="--coordinator/--num-processes/--process-id are JAX's flags",
    ),
]
SECONDS = 300


def kbert_processes(argv, num_processes, devices=1):
    """Runs `python -m kbert.cli ARGV` as a job of `num_processes` of
    `devices` CPU devices each; returns each process's output. Fails naming
    the process that failed or hung."""
    env = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    flags = []
    if num_processes > 1:
        flags = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2"]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "kbert.cli", *argv, *flags]
            + (["--process-id", str(index)] if flags else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
        )
        for index in range(num_processes)
    ]
    deadline = time.monotonic() + SECONDS
    outputs = []
    try:
        for index, process in enumerate(processes):
            out, _ = process.communicate(timeout=max(1, deadline - time.monotonic()))
            outputs.append(out)
            assert process.returncode == 0, f"process {index} failed:\n{out[-4000:]}"
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return outputs


def test_pretrain_command_on_two_processes_evaluates_like_one(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    # fmt: off
    argv = [
        "pretrain", "--corpus", str(corpus), "--vocabulary-size", "200",
        "--max-seq-length", "32", "--max-predictions-per-seq", "5", "--num-layers", "1",
        "--hidden-dim", "16", "--num-heads", "2", "--intermediate-dim", "32",
        "--dropout", "0", "--steps", "4", "--batch-size", "8", "--save-every", "4",
        "--log-every", "2", "--warmup-steps", "1", "--quiet",
    ]
    # fmt: on
    kbert_processes([*argv, "--output", str(tmp_path / "one")], 1)
    kbert_processes([*argv, "--output", str(tmp_path / "two")], 2)
    one = json.loads((tmp_path / "one" / "results.json").read_text())
    two = json.loads((tmp_path / "two" / "results.json").read_text())
    assert one["steps"] == two["steps"] == 4
    assert one["train_sequences"] == two["train_sequences"] > 50
    assert one["eval_sequences"] == two["eval_sequences"] > 0
    # Other batches (see the docstring), the same data and steps: measured
    # 5.5369 against 5.5418; an untrained model scores log(200) = 5.30 + NSP.
    assert two["eval_loss"] == pytest.approx(one["eval_loss"], rel=0.01), (one, two)


def test_finetune_command_on_two_processes_trains_and_reports_once(tmp_path):
    import kbert
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer
    from tests.test_case import tiny_backbone

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "a"]
    preprocessor = BertPreprocessor(BertTokenizer(words), sequence_length=8)
    backbone = tiny_backbone(vocabulary_size=len(words))
    kbert.BertTextEmbedder(backbone, preprocessor=preprocessor).save_to_preset(
        tmp_path / "preset"
    )
    rows = ["text,label"] + [
        f"a {word} film,{word}" for _ in range(32) for word in ("good", "bad")
    ]  # 64 rows
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    # fmt: off
    argv = [
        "finetune", str(tmp_path / "train.csv"), "--test", str(tmp_path / "train.csv"),
        "--preset", str(tmp_path / "preset"), "--sequence-length", "8",
        "--batch-size", "16", "--epochs", "3", "--learning-rate", "0.01",
    ]
    # fmt: on
    chief, other = kbert_processes([*argv, "--out", str(tmp_path / "two")], 2)
    assert "Results:" in chief and "Results:" not in other
    results = json.loads((tmp_path / "two" / "results.json").read_text())
    assert results["labels"] == ["bad", "good"]
    assert len(results["history"]["loss"]) == 3  # every epoch ran
    assert results["recipe"]["batch_size"] == 16  # global: 8 rows per process
    assert sorted(os.listdir(tmp_path / "two")) == [
        "confusion_matrix.png",
        "preset",
        "results.json",
        "training_curve.png",
    ]
