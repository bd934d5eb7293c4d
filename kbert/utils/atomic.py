"""Atomic writes: an artifact appears whole at its path or not at all.

The temporary names carry the writer's pid (`kbert.utils.owned_temps`), and
every write first sweeps those that a killed writer left beside its target.
What appears at the path has the permissions the user's umask gives
(library writers such as `mkstemp` or safetensors may make files private).
An `OSError` while writing (a full disk, a file size limit) becomes a
`FileError` naming the path; the temporary is removed.
"""

import contextlib
import os
import shutil
import tempfile

from kbert.utils.file_errors import FileError
from kbert.utils.output_paths import check_output_path
from kbert.utils.owned_temps import owned_prefix, sweep_beside


def _not_written(path, error):
    """`error` (an `OSError` while writing `path`) as one line naming `path`."""
    if isinstance(error, FileError):
        return error
    reason = str(error) if error.filename else error.strerror or str(error)
    if error.errno is None:  # NumPy's short write: "800 requested and 96 written"
        reason += " (a full disk or a file size limit?)"
    return FileError(f"{path} was not written: {reason}.")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def follow_umask(path):
    """Gives `path` (and all under it) the modes the umask gives new files.

    Files get `0o666 & ~umask` (`0o777` for executables), directories
    `0o777 & ~umask`.

    Example:
    >>> follow_umask("out/preset")
    """
    umask = _umask()

    def fix(target, directory):
        executable = directory or os.stat(target).st_mode & 0o111
        os.chmod(target, (0o777 if executable else 0o666) & ~umask)

    if os.path.isdir(path) and not os.path.islink(path):
        for root, directories, files in os.walk(path):
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    fix(os.path.join(root, name), False)
            for name in directories:
                if not os.path.islink(os.path.join(root, name)):
                    fix(os.path.join(root, name), True)
        fix(path, True)
    elif os.path.isfile(path):
        fix(path, False)


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
    check_output_path(path, "directory")
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    sweep_beside(path)
    tmp = tempfile.mkdtemp(prefix=owned_prefix(path), dir=parent)
    try:
        yield tmp
        follow_umask(tmp)
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _not_written(path, error) from error
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.exists(path):
        old = tempfile.mkdtemp(prefix=owned_prefix(path, "old"), dir=parent)
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
    check_output_path(path, "file")
    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sweep_beside(path)
    fd, tmp = tempfile.mkstemp(prefix=owned_prefix(path), dir=os.path.dirname(path))
    os.close(fd)
    try:
        yield tmp
        follow_umask(tmp)
        os.replace(tmp, path)
    except OSError as error:
        raise _not_written(path, error) from error
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
