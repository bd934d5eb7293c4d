"""Temporary names that carry their owner's pid, swept once that owner is gone.

A process killed with SIGKILL runs no cleanup, so every temporary file or
directory kbert makes is named after the process that made it:
`.<name>.tmp-<pid>-<random>` (and `.<name>.old-<pid>-<random>`) beside a
target, `kbert-<purpose>-<pid>-<random>` in the system temporary directory.
The next write sweeps the ones whose process no longer runs. A pid that was
reused by another process keeps its leftovers until that process ends too:
sweeping never removes what a live process may still be writing.
"""

import contextlib
import os
import re
import shutil
import sys
import tempfile

# `.<name>.tmp-<pid>-<random>` or `.<name>.old-<pid>-<random>` beside a target.
OWNED = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-\w+$")
WORK_DIRECTORY = re.compile(r"^kbert-[a-z]+-(\d+)-\w+$")


def process_alive(pid):
    """Whether process `pid` runs (a zombie, killed but not reaped, does not).

    Example:
    >>> process_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
                return file.read().rpartition(")")[2].split()[0] != "Z"
        except OSError:
            return False
    return True


def owned_prefix(path, kind="tmp"):
    """The prefix of this process's temporary names beside `path`.

    Example:
    >>> owned_prefix("out/model.onnx") == f".model.onnx.tmp-{os.getpid()}-"
    True
    """
    return f".{os.path.basename(os.fspath(path))}.{kind}-{os.getpid()}-"


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.remove(path)


def sweep_beside(path):
    """Removes the temporaries of dead processes in `path`'s directory.

    All of them, not only `path`'s: a temporary's own temporaries (an
    exporter in a child process writing into its parent's temporary) are
    named after it. An `.old-` directory holds a previous target while the
    new one is renamed in; if its owner died in between, the previous
    target is put back rather than removed.

    Example:
    >>> sweep_beside("out/model.onnx")  # nothing stale: nothing to do
    """
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        match = OWNED.match(entry)
        if not match or process_alive(int(match.group("pid"))):
            continue
        stale = os.path.join(parent, entry)
        previous = os.path.join(stale, "previous")
        target = os.path.join(parent, match.group("name"))
        if match.group("kind") == "old" and os.path.exists(previous):
            if not os.path.exists(target):
                with contextlib.suppress(OSError):
                    os.rename(previous, target)
        _remove(stale)


def sweep_work_directories():
    """Removes `kbert-<purpose>-<pid>-*` temporary directories of dead processes.

    Example:
    >>> sweep_work_directories()
    """
    root = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.listdir(root):
            match = WORK_DIRECTORY.match(entry)
            if match and not process_alive(int(match.group(1))):
                _remove(os.path.join(root, entry))


@contextlib.contextmanager
def work_directory(purpose):
    """A temporary directory `kbert-<purpose>-<pid>-*`, removed on exit.

    Dead processes' work directories are swept first.

    Example:
    >>> with work_directory("export") as work:
    ...     os.path.basename(work).startswith(f"kbert-export-{os.getpid()}-")
    True
    """
    if not re.fullmatch(r"[a-z]+", purpose):
        raise ValueError(f"purpose must be lowercase letters; got {purpose!r}.")
    sweep_work_directories()
    directory = tempfile.mkdtemp(prefix=f"kbert-{purpose}-{os.getpid()}-")
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
