"""Editing a TFLite flatbuffer's `metadata` list, keeping its zipped files.

A TFLite model may carry named metadata buffers (`Model.metadata`) and, for
MediaPipe and the Task Library, associated files zipped after the
flatbuffer. Adding an entry repacks the flatbuffer and appends the same zip
again.
"""

import io
import zipfile


def associated_files(model_bytes):
    """`{name: bytes}` of the files zipped after a TFLite flatbuffer.

    Example:
    >>> with open(tflite_file, "rb") as file:
    ...     model_bytes = file.read()
    >>> associated_files(model_bytes)  # a token-id file carries none
    {}
    >>> zipped = with_metadata(model_bytes, "note", b"{}", files={"vocab.txt": b"[PAD]"})
    >>> associated_files(zipped)
    {'vocab.txt': b'[PAD]'}
    """
    stream = io.BytesIO(model_bytes)
    if not zipfile.is_zipfile(stream):
        return {}
    with zipfile.ZipFile(stream) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def with_metadata(model_bytes, name, data, files=None):
    """The model with metadata entry `name` set to `data` (bytes).

    `files` (name -> bytes) are added to the associated files, which are
    zipped after the flatbuffer.

    Example:
    >>> with open(tflite_file, "rb") as file:
    ...     model = with_metadata(file.read(), "kbert_export", b'{"task": "classifier"}')
    >>> metadata_entries(model)["kbert_export"]
    b'{"task": "classifier"}'
    """
    # lazy: TFLite libraries only for TFLite files
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    archived = {**associated_files(model_bytes), **(files or {})}
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model_bytes, 0))
    buffer = schema.BufferT()
    buffer.data = list(data)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name = name
    entry.buffer = len(model.buffers) - 1
    model.metadata = [
        m for m in (model.metadata or []) if m.name not in (name, name.encode())
    ]
    model.metadata.append(entry)
    builder = flatbuffers.Builder(len(model_bytes) + len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    stream = io.BytesIO()
    stream.write(bytes(builder.Output()))
    if archived:
        with zipfile.ZipFile(stream, "a") as archive:
            for filename, content in archived.items():
                archive.writestr(filename, content)
    return stream.getvalue()


def metadata_entries(model_bytes):
    """`{name: bytes}` of the `metadata` entries of a TFLite flatbuffer.

    Example:
    >>> with open(tflite_file, "rb") as file:
    ...     sorted(metadata_entries(file.read()))
    ['CONVERSION_METADATA', 'kbert_export', 'min_runtime_version']
    """
    # lazy: TFLite libraries only for TFLite files
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAsModel(model_bytes, 0)
    entries = {}
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        buffer = model.Buffers(entry.Buffer())
        entries[entry.Name().decode("utf-8")] = buffer.DataAsNumpy().tobytes()
    return entries


def embed_text(model_bytes, name, text):
    """The flatbuffer with `text` (UTF-8) as its `metadata` entry `name`: where
    a TFLite file keeps its export record."""
    return with_metadata(model_bytes, name, text.encode("utf-8"))


def read_text(path, name):
    """The text of the `metadata` entry `name` of the TFLite file at `path`, or
    None."""
    with open(path, "rb") as handle:
        data = metadata_entries(handle.read()).get(name)
    return data.decode("utf-8") if data else None
