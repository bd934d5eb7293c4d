"""The BERT weight layout: every kbert variable a checkpoint fills, once.

Each line pairs a weight's name in BERT's own module tree (the variable names
of google-research/bert, without the `bert/` scope; transformers kept the
same tree) with the attribute path of the kbert variable it fills (`{i}` is
the layer index; integers index lists). Checkpoint formats add only how they
spell a name and store its tensor: `kbert.presets.hf_weight_map` and
`kbert.presets.google` turn these lines into `Weight` lines.

Head targets are attribute paths from the task model (the model file names
the layers: `classifier`, `span_classifier`, ...); the others from its
backbone.
"""

EMBEDDINGS = (
    ("embeddings/word_embeddings", "embeddings.token_embedding.embeddings"),
    ("embeddings/position_embeddings", "embeddings.position_embedding.embeddings"),
    ("embeddings/token_type_embeddings", "embeddings.segment_embedding.embeddings"),
    ("embeddings/LayerNorm/gamma", "embeddings.layer_norm.gamma"),
    ("embeddings/LayerNorm/beta", "embeddings.layer_norm.beta"),
)
_L, _K = "encoder/layer_{i}/", "transformer_layers.{i}."
LAYER = (
    (_L + "attention/self/query/kernel", _K + "query.kernel"),
    (_L + "attention/self/query/bias", _K + "query.bias"),
    (_L + "attention/self/key/kernel", _K + "key.kernel"),
    (_L + "attention/self/key/bias", _K + "key.bias"),
    (_L + "attention/self/value/kernel", _K + "value.kernel"),
    (_L + "attention/self/value/bias", _K + "value.bias"),
    (_L + "attention/output/dense/kernel", _K + "attention_output.kernel"),
    (_L + "attention/output/dense/bias", _K + "attention_output.bias"),
    (_L + "attention/output/LayerNorm/gamma", _K + "attention_layer_norm.gamma"),
    (_L + "attention/output/LayerNorm/beta", _K + "attention_layer_norm.beta"),
    (_L + "intermediate/dense/kernel", _K + "intermediate.kernel"),
    (_L + "intermediate/dense/bias", _K + "intermediate.bias"),
    (_L + "output/dense/kernel", _K + "output_dense.kernel"),
    (_L + "output/dense/bias", _K + "output_dense.bias"),
    (_L + "output/LayerNorm/gamma", _K + "output_layer_norm.gamma"),
    (_L + "output/LayerNorm/beta", _K + "output_layer_norm.beta"),
)
POOLER = (
    ("pooler/dense/kernel", "pooler.kernel"),
    ("pooler/dense/bias", "pooler.bias"),
)
_P, _M = "cls/predictions/", "masked_lm_head."
HEADS = {
    "masked_lm": (
        (_P + "transform/dense/kernel", _M + "transform.kernel"),
        (_P + "transform/dense/bias", _M + "transform.bias"),
        (_P + "transform/LayerNorm/gamma", _M + "layer_norm.gamma"),
        (_P + "transform/LayerNorm/beta", _M + "layer_norm.beta"),
        (_P + "output_bias", _M + "output_bias"),
    ),
    "next_sentence": (
        ("cls/seq_relationship/output_weights", "next_sentence_head.kernel"),
        ("cls/seq_relationship/output_bias", "next_sentence_head.bias"),
    ),
    # The head of run_classifier.py: sequence, token and multiple-choice
    # classifiers all name it `classifier`.
    "classifier": (
        ("output_weights", "classifier.kernel"),
        ("output_bias", "classifier.bias"),
    ),
    # The head of run_squad.py: start and end logits.
    "span_classifier": (
        ("cls/squad/output_weights", "span_classifier.kernel"),
        ("cls/squad/output_bias", "span_classifier.bias"),
    ),
}


def backbone_layout(num_layers, pooler=True):
    """`(name, target)` lines of a backbone of `num_layers` layers.

    Example:
    >>> lines = backbone_layout(num_layers=2)
    >>> len(lines)
    39
    >>> lines[5]
    ('encoder/layer_0/attention/self/query/kernel', 'transformer_layers.0.query.kernel')
    """
    layers = tuple(
        (name.format(i=i), target.format(i=i))
        for i in range(num_layers)
        for name, target in LAYER
    )
    return EMBEDDINGS + layers + (POOLER if pooler else ())


def head_layout(heads):
    """`(name, target)` lines of the given heads, in order.

    Example:
    >>> head_layout(["span_classifier"])[0]
    ('cls/squad/output_weights', 'span_classifier.kernel')
    """
    return tuple(line for head in heads for line in HEADS[head])


def is_dense_kernel(name):
    """Whether a layout weight is a dense layer's 2-D weight matrix.

    BERT stores `kernel`s as (in, out) and its heads' `output_weights` as
    (out, in); formats say how they store each.

    Example:
    >>> is_dense_kernel("pooler/dense/kernel"), is_dense_kernel("output_weights")
    (True, True)
    """
    return name.endswith(("/kernel", "output_weights"))
