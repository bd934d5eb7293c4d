"""File errors that name the file: `FileError`, `open_npz`, `unreadable`."""

import os
import zipfile

import numpy as np


class FileError(OSError, ValueError):
    """A file that could not be read or written, named in the message.

    An `OSError` for callers that catch those, and a `ValueError` like kbert's
    other input errors (the command line prints it on one line).

    Example:
    >>> str(FileError("out/x.npy was not written: File too large."))
    'out/x.npy was not written: File too large.'
    """


def unreadable(path, error):
    """The `FileError` for a weights file that `error` kept from loading."""
    reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return FileError(
        f"{path}: not a readable weights file ({reason}); it may be truncated or "
        "damaged: save or copy it again."
    )


def open_npz(path):
    """`np.load(path)` of an .npz archive; a `FileError` naming `path` when
    it is missing, truncated or not an .npz.

    Example:
    >>> with open("cut.npz", "wb") as file:
    ...     _ = file.write(b"PK")
    >>> try:
    ...     open_npz("cut.npz")
    ... except ValueError as error:
    ...     print(error)
    cut.npz: not a readable weights file (not a complete .npz archive); it may be
    truncated or damaged: save or copy it again.
    """
    if not os.path.isfile(path):
        raise FileError(f"{path}: no such file.")
    try:
        if not zipfile.is_zipfile(path):
            raise zipfile.BadZipFile("not a complete .npz archive")
        return np.load(path)
    except (OSError, EOFError, zipfile.BadZipFile, ValueError) as error:
        raise unreadable(path, error) from None
