"""`kbert pretrain` and `kbert fill-mask` end to end, at toy sizes (a smoke
version of the Wikipedia demonstration's command path)."""

import argparse
import json

import keras
import numpy as np
import pytest

from kbert.pretraining.commands import add_fill_mask_command, add_pretrain_command
from kbert.pretraining.evaluation import masked_token_counts
from tests.pretraining.pretraining_helpers import write_corpus


def kbert_main(argv):
    parser = argparse.ArgumentParser(prog="kbert")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_pretrain_command(subparsers)
    add_fill_mask_command(subparsers)
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 50)


def test_pretrain_command_runs_resumes_and_fills_masks(corpus, tmp_path, capsys):
    output = tmp_path / "run"
    # fmt: off
    argv = [
        "pretrain", "--corpus", corpus, "--output", str(output),
        "--vocabulary-size", "300", "--max-seq-length", "32",
        "--max-predictions-per-seq", "5", "--num-layers", "1", "--hidden-dim", "16",
        "--num-heads", "2", "--intermediate-dim", "32", "--steps", "6",
        "--batch-size", "8", "--steps-per-epoch", "3", "--save-every", "3",
        "--log-every", "3", "--warmup-steps", "1", "--quiet",
    ]
    # fmt: on
    if keras.backend.backend() == "tensorflow":
        # Tracing takes longer than these few steps; the demo runs compiled.
        argv += ["--jit-compile", "off", "--run-eagerly"]
    assert kbert_main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["steps"] == 6 and results["train_tokens"] > 1000
    # Accuracies over what the held-out data holds: correct predictions out of
    # its masked tokens (static masking) and out of its sequences, not out of
    # padded prediction slots or averaged per batch.
    held_out = masked_token_counts(output / "data" / "eval")  # static: counted once
    masked = sum(held_out.values())
    for key, count in (
        ("eval_mlm_accuracy", masked),
        ("eval_nsp_accuracy", results["eval_sequences"]),
    ):
        correct = results[key] * count
        assert abs(correct - round(correct)) < 1e-3, (key, correct, count)
    # The majority baseline: the most frequent token of the training data
    # (dynamic masking: every real token but the special ones), predicted at
    # every masked position of the held-out data.
    vocabulary = (output / "vocab.txt").read_text().splitlines()
    special = [vocabulary.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")]
    train = masked_token_counts(output / "data" / "train", ignore_ids=special)
    majority = train.most_common(1)[0][0]
    assert results["majority_token"] == vocabulary[majority]
    assert results["majority_mlm_accuracy"] == held_out[majority] / masked
    # The loss of the final weights on the held-out data: what fit's
    # validation after the last epoch measured, and lower than after the
    # first epoch (the 3 steps between learned something).
    metrics = [json.loads(line) for line in (output / "run" / "metrics.jsonl").open()]
    held_out_loss = {r["step"]: r["val_loss"] for r in metrics if "val_loss" in r}
    np.testing.assert_allclose(results["eval_loss"], held_out_loss[6], rtol=1e-5)
    assert results["eval_loss"] < held_out_loss[3]
    assert (output / "vocab.txt").exists()
    assert (output / "model" / "backbone.json").exists()
    assert (output / "model" / "vocab.txt").exists()
    assert [r["step"] for r in metrics if "val_loss" in r] == [3, 6]  # held-out, per epoch
    # Every series the learning curve plots is there at every logged step: a
    # missing key would leave its line out of the PNG without a word.
    curve = ("loss", "mlm_logits_loss", "nsp_logits_loss")
    curve += ("mlm_logits_mlm_accuracy", "nsp_logits_nsp_accuracy")
    trained = [r for r in metrics if "val_loss" not in r]
    assert [r["step"] for r in trained] == [3, 6]  # --log-every 3
    for name in curve:
        assert all(np.isfinite(r[name]) for r in trained), name
        assert all(np.isfinite(r["val_" + name]) for r in metrics if "val_loss" in r)
    # matplotlib is in the test extras: the curve must be there.
    assert results["learning_curve"] == str(output / "learning_curve.png")
    assert (output / "learning_curve.png").stat().st_size > 1000

    # The same command again finds the data and the step-6 checkpoint: it
    # trains no further and evaluates the same weights. A file of the user's
    # in the run directory is refused first, then written beside with
    # --overwrite, which says so.
    (output / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"kbert did not write \(notes.txt\)"):
        kbert_main(argv)
    capsys.readouterr()
    assert kbert_main([*argv, "--overwrite"]) == 0
    assert "overwrite=True: replacing" in capsys.readouterr().err
    assert (output / "notes.txt").read_text() == "mine"
    again = json.loads((output / "results.json").read_text())
    np.testing.assert_allclose(again["eval_loss"], results["eval_loss"], rtol=1e-5)

    capsys.readouterr()
    text = "w1 w2 [MASK] w4 ."
    assert kbert_main(["fill-mask", str(output / "model"), text, "--top-k", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == text
    assert printed[1].startswith("  [MASK] 1:") and printed[1].count("(") == 3
    with pytest.raises(ValueError, match="No \\[MASK\\]"):
        kbert_main(["fill-mask", str(output / "model"), "w1 w2 ."])
