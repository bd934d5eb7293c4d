"""`kbert pretrain` reruns: the same run resumes (and says from which step),
another corpus or model shape is refused, `--restart` starts afresh, and an
unloadable newest checkpoint is skipped for the one before."""

import json
import os

import keras
import pytest

from kbert.pretraining.config import PretrainingConfig
from kbert.pretraining.pipeline import RUN_RECORD, check_rerun, run_pretraining, run_record
from tests.pretraining.pretraining_helpers import write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus.txt", 20)


def tiny_config(corpus, output, **changes):
    options = dict(
        corpus=(corpus,),
        output=str(output),
        eval_fraction=0.0,
        vocabulary_size=200,
        max_seq_length=16,
        max_predictions_per_seq=3,
        dupe_factor=1,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        steps=2,
        batch_size=4,
        save_every=1,
        log_every=1,
        warmup_steps=1,
        quiet=True,
    )
    if keras.backend.backend() == "tensorflow":
        options.update(jit_compile="off", run_eagerly=True)
    return PretrainingConfig(**{**options, **changes})


@pytest.mark.backend_independent
def test_a_rerun_with_another_corpus_or_shape_is_refused(corpus, tmp_path):
    config = tiny_config(corpus, tmp_path / "run")
    record = run_record(config)
    path = tmp_path / "run" / RUN_RECORD
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    check_rerun(config, record)  # the same arguments: resumes
    check_rerun(tiny_config(corpus, tmp_path / "run", steps=50), record)  # longer: fine
    wider = tiny_config(corpus, tmp_path / "run", hidden_dim=32)
    with pytest.raises(ValueError, match=r"--hidden-dim 8 -> 32.*add --restart"):
        check_rerun(wider, run_record(wider))
    with open(corpus, "a") as file:
        file.write("w1 w2 w3 .\n")
    with pytest.raises(ValueError, match=r"the --corpus files' contents \(SHA-256"):
        check_rerun(config, run_record(config))


def test_rerun_resumes_refuses_and_restarts(corpus, tmp_path, capsys):
    output = tmp_path / "run"
    run_pretraining(tiny_config(corpus, output))
    assert json.loads((output / RUN_RECORD).read_text())["arguments"]["hidden_dim"] == 8
    capsys.readouterr()
    run_pretraining(tiny_config(corpus, output))
    assert "Resumed from step 2" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"--hidden-dim 8 -> 16"):
        run_pretraining(tiny_config(corpus, output, hidden_dim=16))
    results = run_pretraining(tiny_config(corpus, output, hidden_dim=16, restart=True))
    assert "Resumed" not in capsys.readouterr().err
    assert json.loads((output / RUN_RECORD).read_text())["arguments"]["hidden_dim"] == 16
    assert results["steps"] == 2


def test_a_truncated_newest_checkpoint_is_skipped(corpus, tmp_path, capsys):
    output = tmp_path / "run"
    run_pretraining(tiny_config(corpus, output))
    checkpoints = output / "run" / "checkpoints"
    newest = checkpoints / "ckpt-000000002" / "model.weights.h5"
    size = os.path.getsize(newest)
    with open(newest, "r+b") as file:
        file.truncate(size // 2)
    capsys.readouterr()
    run_pretraining(tiny_config(corpus, output, steps=3))
    err = capsys.readouterr().err
    assert "Skipping checkpoint" in err and "ckpt-000000002" in err
    assert "Resumed from step 1" in err
    assert sorted(os.listdir(checkpoints))[-1] == "ckpt-000000003"


def test_no_loadable_checkpoint_is_refused_by_name(corpus, tmp_path):
    # A run from before the arguments were recorded, rerun with another shape:
    # every checkpoint fails to load, and the message lists them.
    output = tmp_path / "run"
    run_pretraining(tiny_config(corpus, output))
    os.remove(output / RUN_RECORD)
    with pytest.raises(
        ValueError, match=r"No checkpoint in .* loads.*ckpt-000000002.*--restart"
    ):
        run_pretraining(tiny_config(corpus, output, hidden_dim=16))
