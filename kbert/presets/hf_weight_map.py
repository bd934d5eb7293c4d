"""How Hugging Face BERT checkpoints spell the BERT weight layout.

transformers keeps BERT's module tree with `.` for `/`, `layer.{i}` for
`layer_{i}` and torch parameter names (`weight` for kernels, LayerNorm gammas
and embedding tables, `bias` for biases and betas); only the heads below are
renamed. Its `Linear.weight` is (out, in), hence `TRANSPOSE` onto Keras
kernels. The targets are `kbert.presets.bert_layout`'s.

Names here are canonical: without the `bert.` prefix task checkpoints put on
the encoder, and with `LayerNorm.weight/bias` for the legacy `gamma/beta`
(`canonical_name` maps a stored name to its canonical one).
"""

import re

from kbert.presets import bert_layout
from kbert.presets.weight_map import AS_IS, TRANSPOSE, Weight

ENCODER_PREFIX = "bert."
# The heads transformers names differently from BERT (layout name -> HF name).
RENAMED = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "output_weights": "classifier.weight",
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",
    "cls/squad/output_bias": "qa_outputs.bias",
}
# The torch parameter name of each BERT variable name.
PARAMETERS = {
    "kernel": "weight",
    "output_weights": "weight",
    "gamma": "weight",
    "beta": "bias",
    "bias": "bias",
    "output_bias": "bias",
}
# Other names a checkpoint may store the same tensor under.
ALIASES = {"cls.predictions.bias": ("cls.predictions.decoder.bias",)}
# A stored decoder must be the word embedding: kbert's decoder reads it.
TIED = {"cls.predictions.decoder.weight": "embeddings.word_embeddings.weight"}
# Buffers, not weights, that some checkpoints store.
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


def hf_name(name):
    """The canonical transformers name of a BERT layout name.

    Example:
    >>> hf_name("encoder/layer_3/attention/output/LayerNorm/gamma")
    'encoder.layer.3.attention.output.LayerNorm.weight'
    >>> hf_name("embeddings/word_embeddings"), hf_name("cls/squad/output_bias")
    ('embeddings.word_embeddings.weight', 'qa_outputs.bias')
    """
    if name in RENAMED:
        return RENAMED[name]
    *modules, last = re.sub(r"/layer_(\d+)/", r"/layer.\1/", name).split("/")
    if last.endswith("_embeddings"):  # an embedding table: its `weight`
        return ".".join(modules + [last, "weight"])
    return ".".join(modules + [PARAMETERS[last]])


def hf_weight(line):
    """The `Weight` of a layout `(name, target)` line in an HF checkpoint.

    Example:
    >>> weight = hf_weight(("pooler/dense/kernel", "pooler.kernel"))
    >>> weight.source, weight.transform.name
    ('pooler.dense.weight', 'transposed')
    """
    name, target = line
    source = hf_name(name)
    transform = TRANSPOSE if bert_layout.is_dense_kernel(name) else AS_IS
    return Weight(source, target, transform, ALIASES.get(source, ()))


def backbone_weights(num_layers, pooler=True):
    """The backbone's weight lines for `num_layers` layers, with or without the pooler.

    Example:
    >>> len(backbone_weights(num_layers=6))
    103
    """
    return [hf_weight(line) for line in bert_layout.backbone_layout(num_layers, pooler)]


def head_weights(heads):
    """The weight lines of the given heads.

    Example:
    >>> [w.source for w in head_weights(["next_sentence"])]
    ['cls.seq_relationship.weight', 'cls.seq_relationship.bias']
    """
    return [hf_weight(line) for line in bert_layout.head_layout(heads)]


_HEAD_OF = {
    name: head
    for head in bert_layout.HEADS
    for weight in head_weights([head])
    for name in weight.names
}
_HEAD_OF.update(dict.fromkeys(TIED, "masked_lm"))


def canonical_name(name):
    """A stored HF name without the `bert.` prefix and with LayerNorm weight/bias.

    Example:
    >>> canonical_name("bert.embeddings.LayerNorm.gamma")
    'embeddings.LayerNorm.weight'
    """
    name = name.removeprefix(ENCODER_PREFIX)
    if ".LayerNorm." in name or name.startswith("LayerNorm."):
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
        name = name.replace("LayerNorm.beta", "LayerNorm.bias")
    return name


def stored_name(name, prefixed):
    """The name to write: encoder weights get `bert.` in task checkpoints.

    Example:
    >>> stored_name("pooler.dense.bias", prefixed=True)
    'bert.pooler.dense.bias'
    """
    return ENCODER_PREFIX + name if prefixed and head_of(name) is None else name


def head_of(name):
    """The head a canonical name belongs to, or None for the encoder.

    Example:
    >>> head_of("cls.seq_relationship.bias")
    'next_sentence'
    """
    return _HEAD_OF.get(name)
