"""The `kbert` command line as a user meets it: light `--help` with defaults,
no TensorFlow/absl/CUDA noise unless `--verbose`, no irrelevant warnings."""

import argparse
import os
import subprocess
import sys

import keras
import pytest

from kbert.cli import COMMANDS, build_parser
from kbert.utils import quiet

HEAVY = ("tensorflow", "keras", "jax", "torch")


def _subcommands():
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def _imported(argv):
    """`(stdout, modules imported)` of `python -X importtime -m kbert.cli *argv`."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kbert.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    modules = {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    return result.stdout, modules


def test_every_command_is_registered():
    assert len(_subcommands()) == len(COMMANDS)


@pytest.mark.backend_independent
@pytest.mark.parametrize("command", [None, *sorted(_subcommands())])
def test_help_loads_no_framework_and_shows_defaults(command):
    argv = ["--help"] if command is None else [command, "--help"]
    out, modules = _imported(argv)
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert not loaded, f"kbert {' '.join(argv)} imported {loaded[:5]}"
    assert "--verbose" in out
    if command is None:
        return
    text = " ".join(out.split())  # help wraps lines
    for action in _subcommands()[command]._actions:
        shown = action.default not in (None, False, argparse.SUPPRESS)
        if action.option_strings and shown and "default" not in (action.help or ""):
            assert f"(default: {action.default})" in text, (command, action.dest)


def test_cli_run_prints_no_log_noise_and_no_unused_pooler_warning():
    """`kbert fill-mask splade_tiny_mlm`: a masked LM without pooler weights."""
    env = {k: v for k, v in os.environ.items() if k not in quiet.QUIET_ENVIRONMENT}
    env["KERAS_BACKEND"] = keras.backend.backend()
    result = subprocess.run(
        [sys.executable, "-m", "kbert.cli", "fill-mask", "splade_tiny_mlm", "A [MASK]."],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "[MASK] 1:" in result.stdout
    noise = [
        line
        for line in result.stderr.splitlines()
        if quiet.NATIVE_LOG_LINE.match(line.encode())
        or any(word in line for word in ("cuInit", "absl", "oneDNN", "cuda", "CUDA"))
    ]
    assert not noise, noise
    output = result.stdout + result.stderr
    assert "pooler" not in output, output[-2000:]


def test_native_log_lines_are_dropped_and_the_rest_kept_in_order():
    read_end, write_end = os.pipe()
    out_read, out_write = os.pipe()
    lines = [
        b"WARNING: All log messages before absl::InitializeLog() is called are written "
        b"to STDERR\n",
        b"I0000 00:00:1795451791.532226    6098 port.cc:153] oneDNN custom operations\n",
        b"E0000 00:00:1795450976.733644    6098 cuda_platform.cc:52] failed call to cuInit\n",
        b"Epoch 1/3\r12/40 [====\r",
        b"Error: bad input.csv line 3\n",
        b"W1123 16:20:17.000001 123 some_file.cc:9] warning\n",
        b"Traceback (most recent call last):\n",
    ]
    os.write(write_end, b"".join(lines))
    os.close(write_end)
    quiet._pump(read_end, out_write)
    os.close(out_write)
    with os.fdopen(out_read, "rb") as file:
        kept = file.read()
    assert kept == b"Epoch 1/3\r12/40 [====\rError: bad input.csv line 3\n" + lines[-1]


def test_verbose_keeps_the_logs(monkeypatch):
    environment = {k: v for k, v in os.environ.items() if k not in quiet.QUIET_ENVIRONMENT}
    monkeypatch.setattr(os, "environ", {**environment, "JAX_PLATFORMS": "cpu"})
    args = build_parser().parse_args(["fill-mask", "m", "a [MASK]", "--verbose"])
    assert args.verbose
    quiet.quiet_logs(verbose=args.verbose)
    assert not set(quiet.QUIET_ENVIRONMENT) & set(os.environ)
    quiet.quiet_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
