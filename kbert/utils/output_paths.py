"""Checking where a command will write before it does any work.

Every writer (exporters, `convert`, `save_hf`, `save_to_preset`, `kbert
finetune`, `kbert pretrain`, `kbert embed`, `kbert attention`) calls
`kbert.utils.artifact_kinds.check_target` first, which calls
`check_output_path`, so that a path it cannot write fails in a moment with
the path named, not after minutes of loading and converting.
"""

import contextlib
import os
import tempfile

from kbert.utils.owned_temps import owned_prefix

KINDS = ("file", "directory")


def check_output_path(path, kind):
    """Raises `ValueError` unless `path` can be written as a `kind`.

    `kind` is `"file"` or `"directory"`. The path must not already be the
    other kind; its nearest existing ancestor must be a directory (the
    missing ones are made when writing) that this process can write in,
    which is tried by making and removing a file there (permission bits
    alone say nothing for root or on a read-only file system); so is an
    existing directory at `path`.

    Example:
    >>> check_output_path("out/model.onnx", "file")
    >>> with open("afile.txt", "w") as file:
    ...     _ = file.write("text")
    >>> check_output_path("afile.txt/model.onnx", "file")
    Traceback (most recent call last):
    ...
    ValueError: Cannot write afile.txt/model.onnx: afile.txt is a file, not a directory.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}.")
    if path is None or not os.fspath(path):
        raise ValueError("The output path is empty.")
    shown = os.fspath(path)
    absolute = os.path.abspath(shown)
    if os.path.isdir(absolute) and kind == "file":
        raise ValueError(f"Cannot write {shown}: it is a directory; a file goes there.")
    if os.path.lexists(absolute) and not os.path.isdir(absolute) and kind == "directory":
        raise ValueError(f"Cannot write {shown}: it is a file; a directory goes there.")
    ancestor = os.path.dirname(absolute)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise ValueError(
            f"Cannot write {shown}: {_shown(ancestor, shown)} is a file, not a directory."
        )
    _try_writing(ancestor, absolute, shown)
    if os.path.isdir(absolute):  # files go inside it too (a resumed run, tokenizer files)
        _try_writing(absolute, absolute, shown)


def _try_writing(directory, absolute, shown):
    try:
        fd, probe = tempfile.mkstemp(prefix=owned_prefix(absolute), dir=directory)
    except OSError as error:
        raise ValueError(
            f"Cannot write {shown}: {_shown(directory, shown)} is not writable "
            f"({error.strerror})."
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.remove(probe)


def _shown(ancestor, shown):
    """`ancestor` as the user wrote it when it is a prefix of their path."""
    relative = os.path.relpath(ancestor)
    if not os.path.isabs(shown) and not relative.startswith(".."):
        return relative
    return ancestor
