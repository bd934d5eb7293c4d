"""How keras-hub's `BertBackbone` / `BertTextClassifier` store the BERT layout.

keras-hub's `save_to_preset` writes `model.weights.h5` (the backbone) and
`task.weights.h5` (the head) in Keras' weights format: each layer's
variables under `layers/<layer>/vars/<i>`, layers named by class in graph
order (`transformer_encoder`, `transformer_encoder_1`, ...; the pooler is
the one top-level `dense`). Its attention projections are `EinsumDense`s
with a heads axis, (hidden, heads, head_dim) kernels and (heads, head_dim)
biases: reshaped onto kbert's (hidden, hidden) `Dense` kernels. Targets
are `kbert.presets.bert_layout`'s.
"""

from kbert.presets import bert_layout
from kbert.presets.weight_map import AS_IS, Transform, Weight

BACKBONE_FILE = "model.weights.h5"
TASK_FILE = "task.weights.h5"
_E = "layers/transformer_encoder{suffix}/"
_A = _E + "_self_attention_layer/"
# BERT layout name (without the layer prefix) -> keras-hub variable path.
EMBEDDINGS = {
    "embeddings/word_embeddings": "layers/reversible_embedding/vars/0",
    "embeddings/position_embeddings": "layers/position_embedding/vars/0",
    "embeddings/token_type_embeddings": "layers/embedding/vars/0",
    "embeddings/LayerNorm/gamma": "layers/layer_normalization/vars/0",
    "embeddings/LayerNorm/beta": "layers/layer_normalization/vars/1",
}
LAYER = {
    "attention/self/query/kernel": _A + "query_dense/vars/0",
    "attention/self/query/bias": _A + "query_dense/vars/1",
    "attention/self/key/kernel": _A + "key_dense/vars/0",
    "attention/self/key/bias": _A + "key_dense/vars/1",
    "attention/self/value/kernel": _A + "value_dense/vars/0",
    "attention/self/value/bias": _A + "value_dense/vars/1",
    "attention/output/dense/kernel": _A + "output_dense/vars/0",
    "attention/output/dense/bias": _A + "output_dense/vars/1",
    "attention/output/LayerNorm/gamma": _E + "_self_attention_layer_norm/vars/0",
    "attention/output/LayerNorm/beta": _E + "_self_attention_layer_norm/vars/1",
    "intermediate/dense/kernel": _E + "_feedforward_intermediate_dense/vars/0",
    "intermediate/dense/bias": _E + "_feedforward_intermediate_dense/vars/1",
    "output/dense/kernel": _E + "_feedforward_output_dense/vars/0",
    "output/dense/bias": _E + "_feedforward_output_dense/vars/1",
    "output/LayerNorm/gamma": _E + "_feedforward_layer_norm/vars/0",
    "output/LayerNorm/beta": _E + "_feedforward_layer_norm/vars/1",
}
POOLER = {
    "pooler/dense/kernel": "layers/dense/vars/0",
    "pooler/dense/bias": "layers/dense/vars/1",
}
# `BertTextClassifier`'s `logits` Dense, in task.weights.h5.
HEADS = {
    "classifier": {
        "output_weights": "layers/dense/vars/0",
        "output_bias": "layers/dense/vars/1",
    }
}


def split_heads(num_heads):
    """The transforms of the attention projections, per stored rank.

    Example:
    >>> kernel, bias, output = split_heads(2)
    >>> kernel.checkpoint_shape((8, 8)), bias.checkpoint_shape((8,))
    ((8, 2, 4), (2, 4))
    >>> output.checkpoint_shape((8, 8))
    (2, 4, 8)
    """
    kernel = Transform(
        "heads merged",
        lambda x: x.reshape(x.shape[0], -1),
        lambda x: x.reshape(x.shape[0], num_heads, -1),
        lambda shape: (shape[0], num_heads, shape[1] // num_heads),
    )
    bias = Transform(
        "heads merged",
        lambda x: x.reshape(-1),
        lambda x: x.reshape(num_heads, -1),
        lambda shape: (num_heads, shape[0] // num_heads),
    )
    output = Transform(
        "heads merged",
        lambda x: x.reshape(-1, x.shape[-1]),
        lambda x: x.reshape(num_heads, -1, x.shape[-1]),
        lambda shape: (num_heads, shape[0] // num_heads, shape[1]),
    )
    return kernel, bias, output


def _source(name):
    """The keras-hub path of a layout name; the file is `backbone/` or `task/`."""
    for names in HEADS.values():
        if name in names:
            return "task/" + names[name]
    if name in EMBEDDINGS:
        return "backbone/" + EMBEDDINGS[name]
    if name in POOLER:
        return "backbone/" + POOLER[name]
    _, index, rest = name.split("/", 2)
    index = int(index.removeprefix("layer_"))
    return "backbone/" + LAYER[rest].format(suffix=f"_{index}" if index else "")


def keras_hub_weights(num_layers, num_heads, heads=()):
    """The weight lines of a keras-hub BERT with the given heads.

    Example:
    >>> lines = keras_hub_weights(num_layers=2, num_heads=2, heads=["classifier"])
    >>> len(lines), lines[5].source
    (41, 'backbone/layers/transformer_encoder/_self_attention_layer/query_dense/vars/0')
    """
    kernel, bias, output = split_heads(num_heads)
    transforms = {
        "attention/self/query/kernel": kernel,
        "attention/self/key/kernel": kernel,
        "attention/self/value/kernel": kernel,
        "attention/self/query/bias": bias,
        "attention/self/key/bias": bias,
        "attention/self/value/bias": bias,
        "attention/output/dense/kernel": output,
    }
    lines = bert_layout.backbone_layout(num_layers) + bert_layout.head_layout(heads)
    weights = []
    for name, target in lines:
        layer_part = name.split("/", 2)[-1] if name.startswith("encoder/") else name
        weights.append(Weight(_source(name), target, transforms.get(layer_part, AS_IS)))
    return weights
