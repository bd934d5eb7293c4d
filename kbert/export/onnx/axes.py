"""Named symbolic axes of an exported ONNX graph: `batch`, `sequence`, `positions`.

PyTorch's and JAX's exporters name the dynamic axes they are given;
tf2onnx invents one `unk__NNNN` name per input and output axis, so nothing
tells a reader (or onnxruntime's shape inference) that the three inputs share
a batch and a sequence length. `name_axes` renames every dynamic axis of the
graph's inputs and outputs by its role, and the same names inside the graph.
"""

BATCH, SEQUENCE, POSITIONS = "batch", "sequence", "positions"


def _input_axes(spec, name):
    if name == "mask_positions":
        return {0: BATCH, 1: POSITIONS}
    return {0: BATCH, 1 + len(spec.extra_dims): SEQUENCE}


def _output_axes(spec, name):
    axes = {0: BATCH}
    if name in spec.sequence_outputs:  # after the batch (and choices)
        axes[1 + len(spec.extra_dims)] = SEQUENCE
    if name in spec.position_outputs:
        axes[1] = POSITIONS
    return axes


def name_axes(proto, spec):
    """Renames the dynamic axes of `proto`'s inputs and outputs in place.

    Each input and output axis that is dynamic gets its role's name; a name
    the converter used for it anywhere in the graph is replaced too, so that
    intermediate shapes keep pointing at the same axis.

    Example:
    >>> import onnx
    >>> proto = onnx.load(onnx_file)
    >>> proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "unk__1"
    >>> name_axes(proto, spec)
    >>> [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim]
    ['batch', 'sequence']
    """
    renames = {}
    values = [(v, _input_axes(spec, v.name)) for v in proto.graph.input]
    values += [(v, _output_axes(spec, v.name)) for v in proto.graph.output]
    for value, axes in values:
        dims = value.type.tensor_type.shape.dim
        for axis, role in axes.items():
            if axis >= len(dims) or dims[axis].HasField("dim_value"):
                continue
            old = dims[axis].dim_param
            if old and old != role:
                renames.setdefault(old, role)
            dims[axis].dim_param = role
    if not renames:
        return
    for value in list(proto.graph.value_info) + list(proto.graph.output):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in renames:
                dim.dim_param = renames[dim.dim_param]


def axis_names(proto):
    """`{input or output name: [axis name or size, ...]}` of a graph.

    Example:
    >>> import onnx
    >>> names = axis_names(onnx.load(onnx_file))
    >>> names["token_ids"], names["logits"]
    (['batch', 'sequence'], ['batch', 2])
    """
    names = {}
    for value in list(proto.graph.input) + list(proto.graph.output):
        names[value.name] = [
            d.dim_param if d.HasField("dim_param") else d.dim_value
            for d in value.type.tensor_type.shape.dim
        ]
    return names
