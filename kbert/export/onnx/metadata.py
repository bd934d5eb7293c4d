"""Text kept in an ONNX file's `metadata_props`: where it keeps its export record."""


def embed_text(data, key, text):
    """The serialized ONNX model `data` with `text` under `metadata_props[key]`."""
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    proto = onnx.load_from_string(data)
    entries = [p for p in proto.metadata_props if p.key != key]
    del proto.metadata_props[:]
    proto.metadata_props.extend(entries)
    entry = proto.metadata_props.add()
    entry.key, entry.value = key, text
    return proto.SerializeToString()


def read_text(path, key):
    """`metadata_props[key]` of the ONNX file at `path`, or None."""
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    model = onnx.load(path, load_external_data=False)
    for prop in model.metadata_props:
        if prop.key == key:
            return prop.value
    return None
