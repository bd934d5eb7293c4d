"""SHA-256 of files, read in blocks (export records, pretraining reruns)."""

import hashlib


def update_with_file(digest, path):
    """Feeds the bytes of the file at `path` to `digest`, 1 MiB at a time."""
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def file_sha256(path):
    """The sha256 (hex) of the file at `path`.

    Example:
    >>> _ = open("note.txt", "w").write("kbert")
    >>> file_sha256("note.txt")[:12]
    '7acc54ddd4f3'
    """
    digest = hashlib.sha256()
    update_with_file(digest, path)
    return digest.hexdigest()
