"""No lost work: kbert writes over its own artifacts only, never a user's files.

Every writer (`save_to_preset`, `save_hf`, `kbert convert`, the exporters and
`kbert export`, `kbert finetune`, `kbert pretrain`, `kbert embed`, `kbert
attention`) calls `check_target(path, kind, overwrite)` before any work.
`ARTIFACT_KINDS` says, per kind of artifact, which files kbert writes there
(patterns relative to the target; `*` crosses folders) and which folders
inside are artifacts of another kind. A target that is missing, empty, or
holds only such files is written (replaced atomically where the writer
replaces); one that holds anything else is refused with
`ForeignFilesError`, unless `overwrite=True` (`--overwrite`), which writes
over it and says so on stderr.

A file target is judged by its name and its content: an ONNX or TFLite file
kbert wrote carries its export record, an embeddings file is a float32
matrix or `{"text", "embedding"}` lines, a PNG was drawn by matplotlib.
"""

import dataclasses
import fnmatch
import json
import mmap
import os
import sys
import zipfile

from kbert.utils.output_paths import check_output_path
from kbert.utils.owned_temps import OWNED

SHOWN_FILES = 5


@dataclasses.dataclass(frozen=True)
class ArtifactKind:
    """What kbert writes for one kind of artifact.

    `description`: how messages name it; `directory`: a folder (else a
    file); `patterns`: the files kbert writes (relative paths, `fnmatch`
    patterns); `folders`: folders inside that hold an artifact of another
    kind; `written_by_kbert(path)`: for a file kind, whether an existing file
    is one kbert wrote (its name matching `patterns` comes first).
    """

    description: str
    directory: bool
    patterns: tuple
    folders: tuple = ()
    written_by_kbert: object = None


def _has_export_record(path):
    """An ONNX or TFLite file of kbert's carries its `kbert_export` record."""
    with (
        open(path, "rb") as file,
        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data,
    ):
        return data.find(b"kbert_export") >= 0


def _is_embeddings_file(path):
    """A `kbert embed` output: a float32 matrix (.npy) or text/embedding lines."""
    with open(path, "rb") as file:
        head = file.read(4096)
    if path.endswith(".npy"):
        return head.startswith(b"\x93NUMPY") and b"'descr': '<f4'" in head
    try:
        row = json.loads(head.split(b"\n", 1)[0])
    except ValueError:
        return False
    return isinstance(row, dict) and set(row) == {"text", "embedding"}


LORA_RANK_KEY = "__lora_rank__"  # the array that marks kbert's LoRA weights file


def _is_lora_weights(path):
    """A `save_lora_weights` file: an .npz holding `LORA_RANK_KEY`."""
    try:
        with zipfile.ZipFile(path) as archive:
            return f"{LORA_RANK_KEY}.npy" in archive.namelist()
    except zipfile.BadZipFile:
        return False


def _is_matplotlib_png(path):
    """A PNG that matplotlib drew (its `Software` text chunk comes first)."""
    with open(path, "rb") as file:
        head = file.read(1024)
    return head.startswith(b"\x89PNG\r\n\x1a\n") and b"Matplotlib" in head


TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "preprocessor_config.json")
KBERT_PRESET_FILES = (
    "backbone.json",
    "backbone.weights.h5",
    "task.json",
    "task.weights.npz",
    *TOKENIZER_FILES,
)
HF_FILES = (
    "config.json",
    "model.safetensors",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    *TOKENIZER_FILES,
)

ARTIFACT_KINDS = {
    "kbert_preset": ArtifactKind("a kbert preset", True, KBERT_PRESET_FILES),
    "hf": ArtifactKind("a Hugging Face directory", True, HF_FILES),
    # Tokenizer files go into a preset or an HF directory, beside the model's.
    "tokenizer": ArtifactKind(
        "tokenizer files", True, tuple(dict.fromkeys(KBERT_PRESET_FILES + HF_FILES))
    ),
    "saved_model": ArtifactKind(
        "a SavedModel",
        True,
        ("saved_model.pb", "fingerprint.pb", "variables/*", "assets/*", "assets.extra/*"),
    ),
    "openvino": ArtifactKind(
        "an OpenVINO IR directory",
        True,
        ("openvino_model.xml", "openvino_model.bin", "kbert_export.json"),
    ),
    "onnx": ArtifactKind(
        "an ONNX file", False, ("*",), written_by_kbert=_has_export_record
    ),
    "tflite": ArtifactKind(
        "a TFLite file", False, ("*",), written_by_kbert=_has_export_record
    ),
    # `kbert export --format auto`: the fastest artifact and its ranking.
    "auto": ArtifactKind(
        "an auto export directory",
        True,
        (
            "model.onnx",
            "openvino_model.xml",
            "openvino_model.bin",
            "kbert_export.json",
            "ranking.json",
        ),
    ),
    "embeddings": ArtifactKind(
        "an embeddings file",
        False,
        ("*.npy", "*.jsonl"),
        written_by_kbert=_is_embeddings_file,
    ),
    "lora_weights": ArtifactKind(
        "a LoRA weights file", False, ("*.npz",), written_by_kbert=_is_lora_weights
    ),
    "attention_map": ArtifactKind(
        "an attention map", False, ("*.png",), written_by_kbert=_is_matplotlib_png
    ),
    "finetune_output": ArtifactKind(
        "a fine-tuning output directory",
        True,
        ("results.json", "training_curve.png", "confusion_matrix.png"),
        folders=(("preset", "kbert_preset"),),
    ),
    # The main job (`make demo`, examples/sentiment_classification.py).
    "sentiment_demo": ArtifactKind(
        "a sentiment demo output directory",
        True,
        (
            "results.json",
            "training_curve.png",
            "classifier.keras",
            "classifier.tflite",
            "classifier.onnx",
        ),
        folders=(("preset", "kbert_preset"), ("saved_model/1", "saved_model")),
    ),
    "pretraining_output": ArtifactKind(
        "a pretraining run directory",
        True,
        ("vocab.txt", "results.json", "learning_curve.png", "data/*", "run/*"),
        folders=(("model", "kbert_preset"),),
    ),
}


class ForeignFilesError(FileExistsError, ValueError):
    """The target of a writer holds files kbert did not write.

    Example:
    >>> os.makedirs("out/kept", exist_ok=True)
    >>> with open("out/kept/notes.txt", "w") as file:
    ...     _ = file.write("mine")
    >>> check_target("out/kept", "kbert_preset")
    Traceback (most recent call last):
    ...
    kbert.utils.artifact_kinds.ForeignFilesError: Refusing to write a kbert preset to
    out/kept: it holds files kbert did not write (notes.txt). ... pass overwrite=True
    (or --overwrite) to replace it.
    """


def foreign_files(path, kind):
    """The files at `path` that are not part of an artifact of `kind`, sorted.

    Paths are relative to `path` (for a file target: its own name). Leftover
    temporaries of kbert's own writers count as kbert's.

    Example:
    >>> foreign_files("out/never_written", "kbert_preset")
    []
    """
    artifact = _kind(kind)
    path = os.path.abspath(os.fspath(path))
    if not artifact.directory:
        if not os.path.isfile(path) or os.path.islink(path) or not os.path.getsize(path):
            return [os.path.basename(path)] if os.path.islink(path) else []
        name = os.path.basename(path)
        known = any(fnmatch.fnmatchcase(name, p) for p in artifact.patterns)
        if known and (artifact.written_by_kbert is None or _judge(artifact, path)):
            return []
        return [name]
    if not os.path.isdir(path):
        return []
    return sorted(_foreign_in(path, artifact))


def _judge(artifact, path):
    try:
        return bool(artifact.written_by_kbert(path))
    except (OSError, ValueError):
        return False


def _foreign_in(top, artifact):
    found = []
    for root, folders, files in os.walk(top):
        links = [name for name in folders if os.path.islink(os.path.join(root, name))]
        for name in files + links:
            if OWNED.match(name):
                continue
            relative = os.path.relpath(os.path.join(root, name), top).replace(os.sep, "/")
            if not _known(relative, artifact):
                found.append(relative)
    return found


def _known(relative, artifact):
    for folder, kind in artifact.folders:
        if relative.startswith(folder + "/"):
            return _known(relative[len(folder) + 1 :], ARTIFACT_KINDS[kind])
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in artifact.patterns)


def _kind(kind):
    if kind not in ARTIFACT_KINDS:
        raise ValueError(f"kind must be one of {sorted(ARTIFACT_KINDS)}; got {kind!r}.")
    return ARTIFACT_KINDS[kind]


_ANNOUNCED = set()


def check_target(path, kind, overwrite=False):
    """Checks, before any work, that a writer of `kind` may write at `path`.

    Raises `ValueError` when `path` cannot be written (`check_output_path`)
    and `ForeignFilesError` (a `FileExistsError` and a `ValueError`) when it
    holds files that are not part of an artifact of `kind` (see
    `ARTIFACT_KINDS`), naming up to five. With `overwrite=True` those are
    written over; stderr says so (once per path in a process). Returns the
    foreign files found.

    Example:
    >>> check_target("out/new_preset", "kbert_preset")
    []
    >>> os.makedirs("out/mine", exist_ok=True)
    >>> with open("out/mine/notes.txt", "w") as file:
    ...     _ = file.write("mine")
    >>> check_target("out/mine", "kbert_preset", overwrite=True)
    ['notes.txt']
    """
    artifact = _kind(kind)
    if overwrite not in (True, False):
        raise ValueError(f"overwrite must be True or False; got {overwrite!r}.")
    check_output_path(path, "directory" if artifact.directory else "file")
    found = foreign_files(path, kind)
    if not found:
        return found
    shown = os.fspath(path)
    listed = ", ".join(found[:SHOWN_FILES])
    if len(found) > SHOWN_FILES:
        listed += f" and {len(found) - SHOWN_FILES} more"
    if not overwrite:
        raise ForeignFilesError(
            f"Refusing to write {artifact.description} to {shown}: it holds files "
            f"kbert did not write ({listed}). Move them away or choose another path, "
            "or pass overwrite=True (or --overwrite) to replace it."
        )
    key = os.path.abspath(shown)
    if key not in _ANNOUNCED:
        _ANNOUNCED.add(key)
        print(
            f"kbert: overwrite=True: replacing {shown} with {artifact.description}; "
            f"it held files kbert did not write ({listed}).",
            file=sys.stderr,
        )
    return found


def add_overwrite_argument(parser):
    """Adds `--overwrite` (`args.overwrite`) to a writing subcommand's parser.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_overwrite_argument(parser)
    >>> parser.parse_args(["--overwrite"]).overwrite
    True
    """
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write over an output that holds files kbert did not write (default: "
        "refuse; kbert's own earlier output is always replaced)",
    )
