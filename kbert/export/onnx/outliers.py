"""BERT's outlier channels, kept in float32 before int8 quantization.

onnxruntime's int8 MatMuls quantize a whole activation tensor with one
scale. In BERT a few hidden channels of the LayerNorm and GELU outputs are
many times larger than the rest (the outlier features of LLM.int8(),
Dettmers et al. 2022; `split_outlier_channels` picks them from the
calibration texts' channel ranges), so one scale spends most of
the 256 levels on them and the other channels lose their resolution. The
LLM.int8() remedy, which no onnxruntime tool offers for ONNX (Intel Neural
Compressor, which onnxruntime's SmoothQuant option calls, dropped ONNX in
3.x), is to take those channels out of the int8 product:

    y = x @ W  ->  y = (x * inlier_mask) @ W_inliers + x[..., outliers] @ W[outliers]

The first product is the MatMul onnxruntime then quantizes, now with the
range of the ordinary channels; the second is a thin float32 MatMul over
the few outlier channels. Outliers are found on real text: channels whose
largest |value| over the calibration texts exceeds `ratio` times the
median channel's, at most `max_channels` per tensor. In float32 the
rewritten graph computes the same function (tested).
"""

import numpy as np

PREFIX = "kbert_outliers"


def weight_matmuls(proto):
    """MatMul nodes whose second input is a 2-D float initializer (dense layers).

    Example:
    >>> import onnx
    >>> len(weight_matmuls(onnx.load(onnx_file)))  # 2 layers x 6, pooler, head
    14
    """
    import onnx  # lazy: a heavy optional library, only for ONNX artifacts

    initializers = {i.name: i for i in proto.graph.initializer}
    found = []
    for node in proto.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in initializers:
            continue
        weight = initializers[node.input[1]]
        if len(weight.dims) == 2 and weight.data_type == onnx.TensorProto.FLOAT:
            found.append(node)
    return found


def head_matmuls(proto):
    """Names of the dense layers no other dense layer follows: the task head.

    Example:
    >>> import onnx
    >>> proto = onnx.load(onnx_file)
    >>> [node.name for node in weight_matmuls(proto)].index(*head_matmuls(proto))
    13
    """
    dense = {node.name for node in weight_matmuls(proto)}
    consumers = {}
    for node in proto.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    feeds_dense = {}  # node name -> a dense layer lies downstream
    for node in reversed(proto.graph.node):
        feeds_dense[node.name] = any(
            user.name in dense or feeds_dense.get(user.name, False)
            for output in node.output
            for user in consumers.get(output, [])
        )
    return [name for name in dense if not feeds_dense[name]]


def channel_maxima(proto, names, feeds):
    """Largest |value| per channel (last axis) of tensors `names` over `feeds`.

    Example:
    >>> import onnx
    >>> proto = onnx.load(onnx_file)
    >>> tensor = weight_matmuls(proto)[0].input[0]  # the first dense layer's input
    >>> channel_maxima(proto, [tensor], [token_inputs])[tensor].shape  # hidden_dim 8
    (8,)
    """
    # lazy: heavy optional libraries, only for ONNX artifacts
    import onnx
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    del probe.graph.output[:]
    for name in names:
        probe.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    session = onnxruntime.InferenceSession(
        probe.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    maxima = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed)):
            value = np.abs(np.asarray(value)).reshape(-1, value.shape[-1]).max(axis=0)
            maxima[name] = np.maximum(maxima.get(name, 0.0), value)
    return maxima


def split_outlier_channels(proto, feeds, ratio=3.0, max_channels=32, skip=()):
    """Rewrites `proto` in place so outlier channels bypass the int8 MatMuls.

    Args:
        proto: a float32 ONNX model.
        feeds: calibration inputs (dicts of arrays), real text.
        ratio: a channel is an outlier when its max |value| exceeds `ratio`
            times the median channel's.
        max_channels: at most this many outlier channels per tensor.
        skip: names of dense MatMuls to leave alone (e.g. kept float anyway).

    Returns:
        `(float_matmuls, outliers)`: names of the new float32 MatMuls (leave
        them out of quantization) and `{tensor: number of outlier channels}`.

    Example:
    >>> import onnx
    >>> from kbert.export.onnx.runner import OnnxRunner
    >>> proto = onnx.load(onnx_file)
    >>> float_nodes, outliers = split_outlier_channels(proto, [token_inputs], ratio=1.5)
    >>> len(float_nodes) > 0, len(float_nodes) >= len(outliers)
    (True, True)
    >>> onnx.save(proto, "split.onnx")  # the same function in float32:
    >>> got = OnnxRunner("split.onnx")(token_inputs)["logits"]
    >>> want = OnnxRunner(onnx_file)(token_inputs)["logits"]
    >>> float(np.max(np.abs(got - want))) < 1e-5
    True
    """
    from onnx import helper, numpy_helper  # lazy: a heavy optional library

    users = {}
    for node in weight_matmuls(proto):
        if node.name not in skip:
            users.setdefault(node.input[0], []).append(node)
    if not users:
        return [], {}
    maxima = channel_maxima(proto, list(users), feeds)
    weights = {i.name: i for i in proto.graph.initializer}
    nodes = list(proto.graph.node)
    float_matmuls, outliers = [], {}
    for index, (tensor, matmuls) in enumerate(users.items()):
        peak = maxima[tensor]
        median = float(np.median(peak))
        channels = np.argsort(-peak)[:max_channels]
        channels = np.sort(channels[peak[channels] > ratio * median])
        if not len(channels):
            continue
        outliers[tensor] = len(channels)
        base = f"{PREFIX}/{index}"
        mask = np.ones(len(peak), "float32")
        mask[channels] = 0.0
        proto.graph.initializer.extend(
            [
                numpy_helper.from_array(channels.astype("int64"), f"{base}/channels"),
                numpy_helper.from_array(mask, f"{base}/inlier_mask"),
            ]
        )
        split = [
            helper.make_node(
                "Gather",
                [tensor, f"{base}/channels"],
                [f"{base}/outliers"],
                axis=-1,
                name=f"{base}/gather",
            ),
            helper.make_node(
                "Mul",
                [tensor, f"{base}/inlier_mask"],
                [f"{base}/inliers"],
                name=f"{base}/mask",
            ),
        ]
        for number, node in enumerate(matmuls):
            weight = numpy_helper.to_array(weights[node.input[1]])
            inlier_weight = weight.copy()
            inlier_weight[channels] = 0.0
            name = f"{base}/{number}"
            proto.graph.initializer.extend(
                [
                    numpy_helper.from_array(inlier_weight, f"{name}/inlier_weight"),
                    numpy_helper.from_array(weight[channels], f"{name}/outlier_weight"),
                ]
            )
            output = node.output[0]
            node.input[0], node.input[1] = f"{base}/inliers", f"{name}/inlier_weight"
            node.output[0] = f"{name}/inlier_product"
            after = [
                helper.make_node(
                    "MatMul",
                    [f"{base}/outliers", f"{name}/outlier_weight"],
                    [f"{name}/outlier_product"],
                    name=f"{name}/outlier_matmul",
                ),
                helper.make_node(
                    "Add",
                    [f"{name}/inlier_product", f"{name}/outlier_product"],
                    [output],
                    name=f"{name}/sum",
                ),
            ]
            position = nodes.index(node) + 1
            nodes[position:position] = after
            float_matmuls.append(f"{name}/outlier_matmul")
        first = min(nodes.index(node) for node in matmuls)
        nodes[first:first] = split
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    _drop_unused_initializers(proto)
    return float_matmuls, outliers


def _drop_unused_initializers(proto):
    used = {name for node in proto.graph.node for name in node.input}
    kept = [i for i in proto.graph.initializer if i.name in used]
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)
