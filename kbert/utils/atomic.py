"""Atomic writes: an artifact appears whole at its path or not at all."""

import contextlib
import os
import shutil
import tempfile


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a temporary directory that replaces `path` only on success.

    Example:
    >>> # An exception inside the block would leave out/preset as it was.
    >>> with atomic_directory("out/preset") as tmp:
    ...     with open(os.path.join(tmp, "config.json"), "w") as file:
    ...         _ = file.write("{}")
    >>> os.listdir("out/preset")
    ['config.json']
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(path) + ".tmp-", dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private (0700)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.exists(path):
        old = tempfile.mkdtemp(prefix=os.path.basename(path) + ".old-", dir=parent)
        os.rename(path, os.path.join(old, "previous"))
        os.rename(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, path)


@contextlib.contextmanager
def atomic_file(path):
    """Yields a temporary file path that is renamed onto `path` on success.

    Example:
    >>> with atomic_file("out/embeddings.npy") as tmp, open(tmp, "wb") as file:
    ...     np.save(file, np.zeros(3))
    >>> np.load("out/embeddings.npy").shape
    (3,)
    """
    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=os.path.basename(path) + ".tmp-", dir=os.path.dirname(path)
    )
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private (0600)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
