import json

import numpy as np

import kbert
from kbert.finetuning.commands import add_finetune_command
from kbert.inference.embed_command import add_embed_command


def run(add_command, argv):
    import argparse

    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_finetune_command_trains_and_saves_a_preset(tmp_path, tiny_preset):
    rows = [("good fun movie", "pos"), ("dull awful plot", "neg")] * 8
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in rows))
    out = tmp_path / "out"
    argv = [
        "finetune",
        str(train),
        "--test",
        str(train),
        "--preset",
        tiny_preset,
        "--sequence-length",
        "8",
        "--batch-size",
        "8",
        "--epochs",
        "2",
        "--learning-rate",
        "1e-3",
        "--out",
        str(out),
    ]
    assert run(add_finetune_command, argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["neg", "pos"]
    assert 0.0 <= results["test_accuracy"] <= 1.0
    assert (out / "training_curve.png").stat().st_size > 1000
    model = kbert.BertClassifier.from_preset(str(out / "preset"))
    assert model.id2label == {0: "neg", 1: "pos"}
    logits = model.predict(["good fun movie", "dull awful plot"], verbose=0)
    assert logits.shape == (2, 2)


def test_embed_command_matches_the_embedder(tmp_path, tiny_preset):
    texts = ["good movie", "awful plot", "the plot was not fun"]
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts) + "\n")
    expected = kbert.BertTextEmbedder.from_preset(tiny_preset, sequence_length=16).predict(
        texts, verbose=0
    )
    assert (
        run(
            add_embed_command,
            [
                "embed",
                str(source),
                str(tmp_path / "e.npy"),
                "--preset",
                tiny_preset,
                "--sequence-length",
                "16",
            ],
        )
        == 0
    )
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), expected, atol=1e-6)
    assert (
        run(
            add_embed_command,
            [
                "embed",
                str(source),
                str(tmp_path / "e.jsonl"),
                "--preset",
                tiny_preset,
                "--sequence-length",
                "16",
            ],
        )
        == 0
    )
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == texts
    np.testing.assert_allclose([r["embedding"] for r in rows], expected, atol=1e-6)


def test_embed_command_writes_one_row_per_input_line(tmp_path, tiny_preset, capsys):
    # Blank and whitespace-only lines embed as themselves; CRLF endings are
    # line ends; the final newline adds no line.
    lines = ["good movie", "", "awful plot", "   ", "", "the plot"]
    source = tmp_path / "texts.txt"
    source.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    expected = kbert.BertTextEmbedder.from_preset(tiny_preset, sequence_length=16).predict(
        lines, verbose=0
    )
    # JSONL shows the text of each row (.npy takes the same path: test above).
    argv = ["embed", str(source), str(tmp_path / "e.jsonl"), "--preset", tiny_preset]
    assert run(add_embed_command, argv + ["--sequence-length", "16"]) == 0
    rows = [json.loads(r) for r in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == lines
    np.testing.assert_allclose([r["embedding"] for r in rows], expected, atol=1e-6)
    # --help says so.
    try:
        run(add_embed_command, ["embed", "--help"])
    except SystemExit:
        pass
    assert "one embedding per input line" in " ".join(capsys.readouterr().out.split())
