"""Bad command-line inputs: `kbert <cmd>: error: ...` on one line, exit 1."""

import errno

import numpy as np
import pytest

from kbert.cli import main


def run(capsys, argv):
    """`main(argv)`'s exit status and stderr."""
    status = main([str(arg) for arg in argv])
    return status, capsys.readouterr().err


def assert_one_line_error(status, error, command, fragment):
    assert status == 1, error
    assert error.startswith(f"kbert {command}: error: ") and fragment in error, error
    assert error.count("\n") == 1 and "Traceback" not in error, error


# === Counts below 1, refused before any work ===

BELOW_ONE = {
    # ZeroDivisionError
    "finetune --batch-size 0": (["finetune", "train.csv", "--batch-size", "0"], "0"),
    # silently the default batch size
    "embed --batch-size 0": (["embed", "in.txt", "out.npy", "--batch-size", "0"], "0"),
    # StopIteration, after training a vocabulary
    "pretrain --batch-size 0": (
        ["pretrain", "--corpus", "c.txt", "--output", "run", "--batch-size", "0"],
        "0",
    ),
    "export --batch-size 0": (
        ["export", "m", "--format", "tflite", "--batch-size", "0", "-o", "m.tflite"],
        "0",
    ),
    # a double traceback (the TensorFlow export process's, then ours)
    "export --sequence-length 0": (
        ["export", "m", "--format", "tflite", "--sequence-length", "0", "-o", "m.tflite"],
        "0",
    ),
    "export --sequence-length -1": (
        ["export", "m", "--format", "tflite", "--sequence-length", "-1", "-o", "m.tflite"],
        "-1",
    ),
    # printed 19 predictions
    "fill-mask --top-k -3": (["fill-mask", "m", "the [MASK]", "--top-k", "-3"], "-3"),
    "fill-mask --top-k 0": (["fill-mask", "m", "the [MASK]", "--top-k", "0"], "0"),
}


@pytest.mark.backend_independent
@pytest.mark.parametrize("case", list(BELOW_ONE))
def test_counts_below_one_are_refused_by_flag(capsys, case):
    argv, value = BELOW_ONE[case]
    flag = case.split()[1]
    status, error = run(capsys, argv)
    assert_one_line_error(
        status, error, argv[0], f"{flag} {value}: must be a whole number, at least 1."
    )


@pytest.mark.backend_independent
def test_fill_mask_without_texts_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_status:
        main(["fill-mask", "m"])
    assert exit_status.value.code == 2
    assert "the following arguments are required: text" in capsys.readouterr().err


def test_fill_mask_of_an_empty_text_names_it(capsys, tiny_preset):
    status, error = run(capsys, ["fill-mask", tiny_preset, ""])
    assert_one_line_error(status, error, "fill-mask", "No [MASK] token in ''")


# === kbert embed: one row per line, blank lines included ===


@pytest.mark.parametrize("text, rows", [("\n", 1), ("\n\n", 2), ("  \n", 1)])
def test_embed_blank_lines_are_rows(capsys, tmp_path, tiny_preset, text, rows):
    # A file of one blank line was refused: "the file is empty".
    source = tmp_path / "in.txt"
    source.write_text(text)
    output = tmp_path / "out.npy"
    status, error = run(capsys, ["embed", source, output, "--preset", tiny_preset])
    assert status == 0, error
    assert np.load(output).shape[0] == rows


def test_embed_of_an_empty_file_is_refused(capsys, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"")
    status, error = run(capsys, ["embed", source, tmp_path / "out.npy"])
    assert_one_line_error(status, error, "embed", f"{source}: the file is empty.")


# === A full disk mid-write ===


def test_embed_out_of_disk_names_the_file_and_leaves_nothing(
    capsys, tmp_path, tiny_preset, monkeypatch
):
    source = tmp_path / "texts" / "in.txt"
    source.parent.mkdir()
    source.write_text("good movie\nbad plot\n")
    output = tmp_path / "out" / "emb.npy"

    def short_write(file, array):
        file.write(b"\x93NUMPY half")
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(np, "save", short_write)
    status, error = run(capsys, ["embed", source, output, "--preset", tiny_preset])
    assert_one_line_error(
        status, error, "embed", f"{output} was not written: File too large."
    )
    assert list(output.parent.iterdir()) == []


# === kbert export --sequence-length past the model's ===


def test_export_sequence_length_past_the_model_is_named(capsys, tmp_path, tiny_preset):
    # On JAX and PyTorch the TFLite export runs in a TensorFlow process: its
    # ValueError comes back as one (kbert/export/on_tensorflow.py).
    argv = ["export", tiny_preset, "--format", "tflite", "--sequence-length", "600"]
    status, error = run(capsys, [*argv, "-o", tmp_path / "m.tflite"])
    assert_one_line_error(
        status, error, "export", "sequence length 600, longer than max_sequence_length="
    )
    assert not (tmp_path / "m.tflite").exists()
