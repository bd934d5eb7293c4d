import json

import numpy as np
import pytest

import kbert
from kbert.finetuning.commands import add_finetune_command
from kbert.inference.embed_command import add_embed_command
from kbert.utils.artifact_kinds import ForeignFilesError, foreign_files


def run(add_command, argv):
    import argparse

    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_finetune_command_trains_reports_and_saves_a_preset(tmp_path, tiny_preset, capsys):
    from matplotlib.image import imread
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    rows = [("good fun movie", "pos"), ("dull awful plot", "neg"), ("the plot", "meh")]
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in rows * 6))
    out = tmp_path / "out"
    argv = ["finetune", str(train), "--validation", str(train), "--test", str(train)]
    argv += ["--preset", tiny_preset, "--sequence-length", "8", "--batch-size", "8"]
    argv += ["--epochs", "2", "--learning-rate", "1e-3", "--out", str(out)]
    assert run(add_finetune_command, argv) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["meh", "neg", "pos"]
    assert results["recipe"]["learning_rate"] == 1e-3

    # Validation metrics after each epoch: printed and in the history.
    epochs = [line for line in printed.splitlines() if "validation loss" in line]
    assert [line.split(":")[0] for line in epochs] == ["Epoch 1/2 done", "Epoch 2/2 done"]
    assert len(results["history"]["val_macro_f1"]) == 2

    # The per-class table against scikit-learn, on the saved model's predictions.
    model = kbert.BertClassifier.from_preset(str(out / "preset"))
    assert model.id2label == {0: "meh", 1: "neg", 2: "pos"}
    texts = [t for t, _ in rows * 6]
    labels = [results["labels"].index(y) for _, y in rows * 6]
    predicted = np.argmax(model.predict(texts, verbose=0), -1)
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, predicted, labels=[0, 1, 2], zero_division=0
    )
    report = results["classification_report"]
    for i, name in enumerate(results["labels"]):
        got = report["classes"][name]
        np.testing.assert_allclose(
            [got["precision"], got["recall"], got["f1"]],
            [precision[i], recall[i], f1[i]],
            atol=1e-4,
        )
        assert got["support"] == support[i]
        assert f"| {name}" in printed
    assert results["confusion_matrix"] == confusion_matrix(labels, predicted).tolist()
    assert results["test_accuracy"] == np.mean(predicted == np.array(labels))

    # The PNGs exist, open, and every path is printed.
    for name in ("training_curve", "confusion_matrix"):
        image = imread(results["paths"][name])
        assert image.ndim == 3 and min(image.shape[:2]) > 200
    for path in results["paths"].values():
        assert path in printed


@pytest.mark.backend_independent
def test_finetune_help_shows_the_recipe_defaults(capsys):
    import dataclasses

    from kbert.finetuning.recipe import FinetuneRecipe

    try:
        run(add_finetune_command, ["finetune", "--help"])
    except SystemExit:
        pass
    shown = " ".join(capsys.readouterr().out.split())
    recipe = FinetuneRecipe()
    for field in dataclasses.fields(recipe):
        flag = "--" + field.name.replace("_", "-")
        assert flag in shown
        assert f"(default: {getattr(recipe, field.name)})" in shown, flag
    import argparse

    parser = argparse.ArgumentParser()
    add_finetune_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["finetune", "train.csv"])
    assert all(
        getattr(args, f.name) == getattr(recipe, f.name) for f in dataclasses.fields(recipe)
    )


@pytest.mark.backend_independent
def test_one_step_curve_is_drawn_as_a_point(tmp_path):
    import matplotlib.colors
    import matplotlib.pyplot as plt

    from kbert.finetuning.classifier_training import LossHistory
    from kbert.finetuning.plots import training_curve_figure

    curve = LossHistory()
    curve.steps, curve.losses = [1], [0.7]
    curve.validation_steps, curve.validation_losses = [1], [0.6]
    figure = training_curve_figure(curve)
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3] / 255
    axis = figure.axes[0]
    for line, point in zip(axis.lines, [(1, 0.7), (1, 0.6)]):
        x, y = axis.transData.transform(point)
        row = pixels.shape[0] - int(round(y))
        color = np.array(matplotlib.colors.to_rgb(line.get_color()))
        patch = pixels[row - 2 : row + 3, int(round(x)) - 2 : int(round(x)) + 3]
        # The point is painted in its line's color (a marker, not a 0-length line).
        assert np.min(np.abs(patch - color).sum(-1)) < 0.1, line.get_label()
    plt.close(figure)


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


def test_embed_command_keeps_the_users_file(tmp_path, tiny_preset, capsys):

    source = tmp_path / "texts.txt"
    source.write_text("good movie\nawful plot\n")
    output = tmp_path / "data.jsonl"
    output.write_text('{"text": "the user\'s", "label": 1}\n')
    argv = ["embed", str(source), str(output), "--preset", tiny_preset]
    with pytest.raises(ForeignFilesError, match="data.jsonl"):
        run(add_embed_command, argv)
    assert "label" in output.read_text()
    assert run(add_embed_command, [*argv, "--overwrite"]) == 0
    assert "overwrite=True: replacing" in capsys.readouterr().err
    assert run(add_embed_command, argv) == 0  # its own embeddings: replaced
    assert [json.loads(line)["text"] for line in output.open()] == [
        "good movie",
        "awful plot",
    ]


@pytest.mark.backend_independent
def test_finetune_overwrite_writes_beside_the_users_files(tmp_path, tiny_preset, capsys):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "good fun movie,pos\ndull awful plot,neg\n" * 4)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = ["finetune", str(train), "--preset", tiny_preset, "--sequence-length", "8"]
    argv += ["--batch-size", "8", "--epochs", "1", "--out", str(out)]
    with pytest.raises(ValueError, match="notes.txt"):
        run(add_finetune_command, argv)
    capsys.readouterr()
    assert run(add_finetune_command, [*argv, "--overwrite"]) == 0
    assert "overwrite=True: replacing" in capsys.readouterr().err  # it says so
    # All it wrote is its own kind; the user's file stays.
    assert foreign_files(out, "finetune_output") == ["notes.txt"]
    (out / "notes.txt").unlink()
    first = (out / "preset").stat().st_ino
    assert run(add_finetune_command, argv) == 0  # its own output: no flag needed
    assert (out / "preset").stat().st_ino != first  # the preset replaced whole
    assert foreign_files(out, "finetune_output") == []


LONG_REVIEW = " ".join(["the movie was very good fun"] * 4)  # 24 word pieces


@pytest.mark.backend_independent
def test_finetune_counts_long_texts_per_file_and_trains_on_windows(
    tmp_path, tiny_preset, capsys
):
    rows = [("good fun movie", "pos"), (LONG_REVIEW, "pos"), ("dull awful plot", "neg")]
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in rows * 3))
    test = tmp_path / "test.csv"
    test.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in rows))
    base = ["finetune", str(train), "--test", str(test), "--preset", tiny_preset]
    base += ["--sequence-length", "8", "--batch-size", "4", "--epochs", "1"]
    for mode in ("truncate", "windows"):
        out = tmp_path / mode
        argv = base + ["--out", str(out), "--long-texts", mode]
        argv += ["--stride", "2"] if mode == "windows" else []
        assert run(add_finetune_command, argv) == 0
        printed = capsys.readouterr().out
        results = json.loads((out / "results.json").read_text())
        counts = results["long_texts"]
        assert counts["mode"] == mode
        assert counts["train"] == {"truncated": 3, "total": 9, "longest": 26}
        assert counts["test"] == {"truncated": 1, "total": 3, "longest": 26}
        assert f"{train}: 3 of 9 texts are longer than sequence_length=8" in printed
        assert f"{test}: 1 of 3 texts" in printed
        assert ("--long-texts windows" in printed) == (mode == "truncate")
        # The learning-rate schedule spans the steps fit takes: one per batch
        # of 4 texts, or of 4 windows.
        trained = 9
        if mode == "windows":
            model = kbert.BertClassifier.from_preset(
                tiny_preset, num_classes=2, sequence_length=8
            )
            texts = [text for text, _ in rows * 3]
            trained = len(model.window_samples(texts, 2)["example_index"])
            assert counts["train_windows"] == trained > 9
        assert results["training_steps"] == -(-trained // 4)


def test_embed_command_reads_long_texts_in_windows(tmp_path, tiny_preset):
    texts = ["good movie", LONG_REVIEW]
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts) + "\n")
    embedder = kbert.BertTextEmbedder.from_preset(tiny_preset, sequence_length=8)
    expected = embedder.predict(texts, long_texts="windows", stride=2, verbose=0)
    argv = ["embed", str(source), str(tmp_path / "e.npy"), "--preset", tiny_preset]
    argv += ["--sequence-length", "8", "--long-texts", "windows", "--stride", "2"]
    assert run(add_embed_command, argv) == 0
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), expected, atol=1e-6)
