"""The export record: what an artifact is, stored inside the artifact.

Each exporter builds a small JSON record (`build_record`: task, inputs,
outputs, source model, the verification it passed, format details) and
stores it where its format keeps extra data (`write_with_record`), so that
`kbert verify ARTIFACT` knows how to run it. Where that is, is the format's
row of `kbert.export.formats.EXPORTERS`:

- SavedModel: `assets.extra/kbert_export.json` (TF Serving ignores that
  directory; it is where its warm-up requests live too);
- TFLite: a `kbert_export` entry of the flatbuffer's `metadata` list;
- ONNX: the `kbert_export` key of the model's `metadata_props`;
- OpenVINO IR: `kbert_export.json` beside `openvino_model.xml`.

The record holds the sha256 of the artifact's bytes (`sha256`), so that
`kbert verify` finds a changed artifact before loading it (`checked_record`):
for a directory, `{relative path: sha256}` of every file in it but the
record; for a file, which holds its own record, the sha256 of the file with
the 64 hex digits of that digest read as zeros (so `sha256sum` gives another
value).
"""

import hashlib
import json
import mmap
import os
import re

import keras

from kbert.export.checks import check_close
from kbert.export.formats import (
    EXPORTERS,
    RECORD_NAME,
    exporter_named,
    load,
)
from kbert.utils.checksums import file_sha256


def artifact_format(path):
    """`"saved_model"`, `"openvino"`, `"tflite"` or `"onnx"`, judged from the path.

    Example:
    >>> artifact_format("out/model.onnx")
    'onnx'
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        markers = [exporter.marker for exporter in EXPORTERS if exporter.marker]
        for exporter in EXPORTERS:
            if exporter.marker and os.path.isfile(os.path.join(path, exporter.marker)):
                return exporter.name
        for exporter in EXPORTERS:
            if exporter.record_file and os.path.isfile(_record_file(path, exporter)):
                raise ValueError(
                    f"{os.path.join(path, exporter.marker)} is missing (its export "
                    f"record {exporter.record_file} is there); re-export it."
                )
        raise ValueError(f"{path} is a directory without {' or '.join(markers)}.")
    for exporter in EXPORTERS:
        if exporter.suffix and path.endswith(exporter.suffix):
            return exporter.name
    raise ValueError(
        f"{path}: not an export artifact (a SavedModel directory, a .tflite or "
        "an .onnx file)."
    )


def _record_file(directory, exporter):
    return os.path.join(directory, *exporter.record_file.split("/"))


CHECKSUM = "sha256"  # the record's key of the artifact's checksums
_UNSET = "0" * 64  # a file's own digest, as it is hashed


def _own_sha256(data, recorded):
    """The sha256 of `data` (bytes or an mmap) that holds its own digest
    `recorded` in its record, that digest read as zeros; None when `data`
    does not hold `recorded` exactly once."""
    marker = f'"{CHECKSUM}": "{recorded}"'.encode()
    at = data.find(marker)
    if at < 0 or data.find(marker, at + 1) >= 0:
        return None, None
    start = at + len(marker) - len(recorded) - 1
    digest = hashlib.sha256()
    with memoryview(data) as view:
        digest.update(view[:start])
        digest.update(_UNSET.encode())
        digest.update(view[start + len(_UNSET) :])
    return digest.hexdigest(), start


def _directory_sha256(path, exporter):
    """`{relative path: sha256}` of every file under `path` but its record."""
    record = os.path.normpath(exporter.record_file)
    checksums = {}
    for root, directories, names in os.walk(path):
        directories.sort()
        for name in sorted(names):
            relative = os.path.relpath(os.path.join(root, name), path)
            if os.path.normpath(relative) != record:
                checksums[relative.replace(os.sep, "/")] = file_sha256(
                    os.path.join(root, name)
                )
    return checksums


def build_record(kind, model, spec, source, verification, **details):
    """The export record of an artifact of format `kind` made from `model`.

    `details` are the format's own entries (flavour, opset, signatures...);
    `outputs` defaults to the spec's output names.

    Example:
    >>> record = build_record("onnx", classifier, spec, None, {"tolerance": 1e-4}, opset=18)
    >>> record["task"], record["outputs"], record["opset"]
    ('classifier', ['logits', 'probabilities'], 18)
    """
    return {
        "format": kind,
        "task": spec.task,
        "class_name": type(model).__name__,
        "source": os.path.abspath(source) if source else None,
        "outputs": list(spec.output_names),
        "labels": list(spec.labels),
        "backend": keras.backend.backend(),
        **details,
        "verification": verification,
    }


def write_with_record(path, kind, export_record, probe=None):
    """Stores `export_record`, with the artifact's checksums (`sha256`, set
    in `export_record` too), in the verified artifact at `path`.

    A file artifact (TFLite, ONNX) is rewritten: it is run on `probe` (a dict
    of inputs) before and after, on its format's runner, and its outputs must
    not change.

    Example:
    >>> import shutil
    >>> _ = shutil.copy(onnx_file, "c.onnx")
    >>> record = build_record("onnx", classifier, spec, None, {"note": "re-measured"})
    >>> write_with_record("c.onnx", "onnx", record, probe=token_inputs)
    >>> read_record("c.onnx")["verification"]
    {'note': 're-measured'}
    """
    exporter = exporter_named(kind)
    if exporter.record_file:
        file = _record_file(path, exporter)
        export_record[CHECKSUM] = _directory_sha256(path, exporter)
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "w", encoding="utf-8") as handle:
            json.dump(export_record, handle, indent=2, sort_keys=True)
        return
    runner = load(exporter.runner)
    before = runner(path)(probe)
    with open(path, "rb") as handle:
        data = handle.read()
    export_record[CHECKSUM] = _UNSET
    text = json.dumps(export_record, sort_keys=True)
    data = load(exporter.embed_record)(data, RECORD_NAME, text)
    digest, start = _own_sha256(data, _UNSET)
    if digest is None:
        raise RuntimeError(
            f"{path}: its export record's checksum is not in its bytes once."
        )
    export_record[CHECKSUM] = digest
    data = data[:start] + digest.encode() + data[start + len(digest) :]
    with open(path, "wb") as handle:
        handle.write(data)
    after = runner(path)(probe)
    check_close(after, before, 0.0, f"The {kind} artifact after adding its export record")


def read_record(path):
    """The export record stored in an artifact, or `{}` when it has none.

    Raises `ValueError` naming the file when it is missing, empty or cannot
    be read as its format.

    Example:
    >>> read_record(onnx_file)["task"], read_record(tflite_file)["flavour"]
    ('classifier', 'token_ids')
    >>> read_record("missing.onnx")
    Traceback (most recent call last):
    ...
    ValueError: missing.onnx: no such file or directory.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory.")
    kind = artifact_format(path)
    exporter = exporter_named(kind)
    if exporter.record_file:
        file = _record_file(path, exporter)
        if not os.path.isfile(file):
            return {}
        try:
            with open(file, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError) as error:
            raise ValueError(
                f"{file}: not a readable export record ({one_line(error)}); re-export it."
            ) from None
    if not os.path.getsize(path):
        raise ValueError(f"{path} is empty (0 bytes): no {kind} model; re-export it.")
    try:
        text = load(exporter.read_embedded)(path, RECORD_NAME)
        return json.loads(text) if text else {}
    except ImportError:
        raise
    except Exception as error:  # each format's parser raises its own types
        raise ValueError(
            f"{path}: cannot read its {kind} model and export record "
            f"({one_line(error)}): it is damaged or not a kbert export; re-export it."
        ) from None


def one_line(error):
    """`Type: message` of `error`, its last non-empty line, at most 300 characters.

    Example:
    >>> one_line(RuntimeError("The child failed:" + chr(10) + "OSError: no model"))
    'RuntimeError: OSError: no model'
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[-1]}" if lines else type(error).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def checked_record(path):
    """`(record, note)`: the export record of the artifact at `path`, its bytes
    checked first against the record's `sha256`; `note` says when the record
    holds none (records written before kbert kept them), else None.

    Raises `ValueError` naming the file that changed since the export, is
    missing, or cannot be read (`read_record`).

    Example:
    >>> checked_record(onnx_file)[1] is None
    True
    >>> data = bytearray(open(onnx_file, "rb").read())
    >>> data[len(data) // 2] ^= 0xFF
    >>> _ = open("changed.onnx", "wb").write(data)
    >>> checked_record("changed.onnx")
    Traceback (most recent call last):
    ...
    ValueError: changed.onnx changed since it was exported: sha256 ...; re-export it.
    """
    path = os.fspath(path)
    try:
        record = read_record(path)
    except ValueError:
        # A damaged file whose record bytes survived: say that it changed.
        if os.path.isfile(path) and os.path.getsize(path):
            _check_own_file(path, _recorded_in_bytes(path))
        raise
    recorded = record.get(CHECKSUM)
    if not recorded:
        what = "export record holds no checksum" if record else "has no kbert export record"
        return record, (
            f"{path}: its {what}, so its bytes were not checked against the export "
            "(re-export it to record them)."
        )
    directory = os.path.isdir(path)
    if not isinstance(recorded, dict if directory else str):
        raise ValueError(
            f"{path}: its export record's {CHECKSUM} is {type(recorded).__name__}, not "
            f"{'{path: sha256}' if directory else 'a sha256'}; re-export it."
        )
    if not directory:
        _check_own_file(path, recorded)
        return record, None
    for relative, want in sorted(recorded.items()):
        file = os.path.join(path, *relative.split("/"))
        if not os.path.isfile(file):
            raise ValueError(
                f"{file} is missing: the export record lists it (sha256 {want[:12]}…); "
                "re-export it."
            )
        _check_same(file, want, file_sha256(file))
    return record, None


def _recorded_in_bytes(path):
    """The digest a file artifact's record holds, found in its raw bytes."""
    pattern = re.compile(rb'"' + CHECKSUM.encode() + rb'": "([0-9a-f]{64})"')
    with open(path, "rb") as handle:
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = [m.group(1).decode() for m in pattern.finditer(data)]
    # None where an earlier record lingers too (a TFLite file keeps old buffers).
    return found[0] if len(found) == 1 else None


def _check_own_file(path, recorded):
    """Raises when the file artifact at `path` no longer has its own digest."""
    if recorded is None:
        return
    with open(path, "rb") as handle:
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            now, _ = _own_sha256(data, recorded)
    _check_same(path, recorded, now or file_sha256(path))


def _check_same(file, recorded, now):
    if now != recorded:
        raise ValueError(
            f"{file} changed since it was exported: sha256 {recorded[:12]}… recorded, "
            f"{now[:12]}… now; re-export it."
        )
