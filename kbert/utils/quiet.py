"""Quiet start-up: no TensorFlow, absl, gRPC or CUDA log lines unless asked for.

TensorFlow reads its log level once, when it loads, so `quiet_logs` must run
before anything imports it (the command line calls it before its handlers
import their work; examples call `quiet_process` first thing). Lines that
abseil writes before `absl::InitializeLog()` ignore every level setting
(TensorFlow 2.19+ prints its oneDNN and CUDA notes that way), so a program's
own process also filters them out of its stderr (`quiet_process`).
"""

import atexit
import contextlib
import glob
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
import threading

# Environment variables read by TensorFlow/XLA (C++ logs), gRPC and glog.
QUIET_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "GRPC_VERBOSITY": "ERROR",
    "GLOG_minloglevel": "3",
}
# A native (absl/glog) log line of level I, W or E, the note abseil prints
# before its first one, and the second line of TensorFlow's CPU-feature note.
NATIVE_LOG_LINE = re.compile(
    rb"[IWE]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.\-]+:\d+\] "
    rb"|WARNING: All log messages before absl::InitializeLog\(\) is called"
    rb"|To enable the following instructions: .*rebuild TensorFlow"
)


def has_gpu():
    """Whether an NVIDIA GPU device node exists (without loading any framework).

    Example:
    >>> has_gpu() in (True, False)
    True
    """
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def quiet_logs(verbose=False):
    """Silences TensorFlow/absl/gRPC/CUDA logs (values already set are kept);
    keeps JAX on the CPU when there is no GPU (unless `JAX_PLATFORMS` is set).

    `verbose=True` leaves the logs as the libraries print them.

    Example:
    >>> quiet_logs()
    >>> os.environ["TF_CPP_MIN_LOG_LEVEL"] in ("0", "1", "2", "3")
    True
    """
    if "JAX_PLATFORMS" not in os.environ and not has_gpu():
        os.environ["JAX_PLATFORMS"] = "cpu"
    if verbose:
        return
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    for name in ("tensorflow", "absl", "jax._src.xla_bridge"):
        logging.getLogger(name).setLevel(logging.ERROR)


def quiet_process(verbose=False):
    """`quiet_logs`, and native log lines dropped from this process's stderr.

    For a program's own process (the `kbert` command, examples): it replaces
    file descriptor 2 with a filter until the process exits. `verbose=True`
    changes nothing but JAX's platform (see `quiet_logs`).

    Example:
    >>> quiet_process(verbose=True)  # a script's first line: quiet_process()
    """
    quiet_logs(verbose)
    if verbose or getattr(quiet_process, "filtering", False):
        return
    quiet_process.filtering = True
    sys.stderr.flush()
    original = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    thread = threading.Thread(target=_pump, args=(read_end, original), daemon=True)
    thread.start()

    def restore():
        sys.stderr.flush()
        os.dup2(original, 2)  # closes the pipe's last write end: the pump ends
        thread.join(timeout=5)

    atexit.register(restore)


def _pump(read_end, original):
    """Copies the pipe to the original stderr, without native log lines.

    A line (up to "\\n" or "\\r") is held back only while it may still turn
    out to be a log line, so progress bars keep moving.
    """
    pending = b""
    while chunk := os.read(read_end, 65536):
        pending += chunk
        *lines, pending = re.split(rb"(?<=[\r\n])", pending)
        for line in lines:
            if not NATIVE_LOG_LINE.match(line):
                _write(original, line)
        if pending and pending[:1] not in (b"I", b"W", b"E", b"T"):
            _write(original, pending)
            pending = b""
    if pending and not NATIVE_LOG_LINE.match(pending):
        _write(original, pending)
    os.close(read_end)


def _write(fd, data):
    while data:
        data = data[os.write(fd, data) :]


def quiet_library():
    """What `import kbert` does: `quiet_logs`, JAX kept on the CPU without a
    GPU even when Keras imported JAX first, and the native lines TensorFlow
    prints while it is imported (before abseil reads any level) dropped,
    whenever kbert or anything else imports it later. `KBERT_VERBOSE=1`
    leaves every log as the libraries print it.

    Example:
    >>> quiet_library()  # `import kbert` has run it already; it runs once
    """
    verbose = os.environ.get("KBERT_VERBOSE", "") not in ("", "0")
    if getattr(quiet_library, "done", False):
        return
    quiet_library.done = True
    quiet_logs(verbose)
    if verbose:
        return
    if "jax" in sys.modules and os.environ.get("JAX_PLATFORMS") == "cpu":
        with contextlib.suppress(Exception):  # too late once a backend is up
            sys.modules["jax"].config.update("jax_platforms", "cpu")
    if "tensorflow" not in sys.modules:
        sys.meta_path.insert(0, _QuietImport("tensorflow"))


@contextlib.contextmanager
def logger_level(name, level):
    """Sets the Python logger `name` to `level` inside the block, then back.

    Example:
    >>> with logger_level("nncf", logging.WARNING):
    ...     logging.getLogger("nncf").level == logging.WARNING
    True
    """
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield logger
    finally:
        logger.setLevel(previous)


@contextlib.contextmanager
def native_logs_dropped():
    """Drops native log lines written to file descriptor 2 inside the block
    (kept in a temporary file, the rest written back when it ends)."""
    sys.stderr.flush()
    original = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(original, 2)
            os.close(original)
            held.seek(0)
            for line in held:
                if not NATIVE_LOG_LINE.match(line):
                    _write(2, line)


class _QuietImport(importlib.abc.MetaPathFinder):
    """Imports one top-level module inside `native_logs_dropped`, once (a
    `find_spec` that only asks whether it exists imports nothing)."""

    def __init__(self, name):
        self.name = name
        self.searching = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self.searching:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.searching = False
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def quiet_exec_module(module):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            with native_logs_dropped():
                exec_module(module)
                if fullname == "tensorflow" and not has_gpu():
                    # TensorFlow's first op looks for CUDA and prints a cuInit
                    # error past every level setting when JAX loaded first.
                    module.config.list_physical_devices()

        spec.loader.exec_module = quiet_exec_module
        return spec
