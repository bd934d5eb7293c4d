"""Two processes on loopback train like one device: JAX (`DataParallel`, 2 CPU
devices each) and TensorFlow (`MultiWorkerMirroredStrategy` from TF_CONFIG).

The job (`job.py`) runs twice: first 2 steps of data-parallel pretraining
with a checkpoint, fine-tuning on raw strings and, on JAX, a `ModelParallel`
forward pass over all 4 devices; then a new job resumes the pretraining to
step 4. Losses and outputs must equal the one-device runs on the same global
batches (float32, 1e-5).
"""

import os

import keras
import numpy as np
import pytest

from tests.distributed.processes import free_port, run_job
from tests.pretraining.pretraining_helpers import ToyTokenizer, synthetic_documents
from tests.test_case import tiny_backbone

BACKEND = keras.backend.backend()
pytestmark = pytest.mark.skipif(
    BACKEND == "torch", reason="multi-process training runs on JAX and TensorFlow"
)
SCRIPT = os.path.join(os.path.dirname(__file__), "job.py")
WORDS = "good great fun bad dull awful movie plot the a was very not".split()


def make_workdir(directory):
    import kbert
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer
    from kbert.pretraining.data_creation import create_pretraining_data

    tokenizer = ToyTokenizer()
    create_pretraining_data(
        synthetic_documents(12),
        directory / "data",
        tokenizer,
        tokenizer.get_vocabulary(),
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=1,
        masking="dynamic",
        progress=False,
    )
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary), sequence_length=12)
    backbone = tiny_backbone(vocabulary_size=len(vocabulary))
    kbert.BertTextEmbedder(backbone, preprocessor=preprocessor).save_to_preset(
        directory / "preset"
    )


def job(directory, phase, num_processes=2):
    return run_job(
        SCRIPT,
        [directory, phase, BACKEND],
        num_processes,
        env={"KBERT_TEST_PORT2": str(free_port())},
    )


def test_two_processes_train_resume_and_shard_like_one_device(tmp_path):
    make_workdir(tmp_path)
    first = job(tmp_path, "train")
    replicas = 4 if BACKEND == "jax" else 2
    assert [out["devices"] for out in first] == [replicas, replicas]
    # JAX: process 0 ran the one-device references; TensorFlow: a one-process
    # MirroredStrategy job on 2 CPUs (both normalize the MLM loss per replica).
    single = first[0] if BACKEND == "jax" else job(tmp_path, "reference", 1)[0]
    # Written once, by process 0, at step 2.
    assert first[0]["checkpoints"] == first[1]["checkpoints"] == ["ckpt-000000002"]
    for out in first:
        np.testing.assert_allclose(
            out["pretraining"], single["single_pretraining"][:2], atol=1e-5
        )
        np.testing.assert_allclose(
            out["finetuning"], single["single_finetuning"], atol=1e-5
        )
        if BACKEND == "jax":
            assert out["model_parallel_sharding"].endswith("(None, 'model')")
            np.testing.assert_allclose(
                out["model_parallel_outputs"], single["single_outputs"], atol=1e-5
            )
    assert len(single["single_finetuning"]) == 4
    assert single["single_pretraining"][3] < single["single_pretraining"][0]

    resumed = job(tmp_path, "resume")
    for out in resumed:
        assert out["checkpoints"] == ["ckpt-000000002", "ckpt-000000004"]
        np.testing.assert_allclose(
            out["pretraining"], single["single_pretraining"][2:], atol=1e-5
        )
