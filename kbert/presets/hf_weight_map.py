"""The Hugging Face BERT weight map: one line per tensor.

Names are canonical: without the `bert.` prefix task checkpoints put on the
encoder, and with `LayerNorm.weight/bias` for the legacy `gamma/beta`
(`canonical_name` maps a stored name to its canonical one). Targets are
attribute paths from the backbone (`BACKBONE`, `POOLER`) or from the task
model (`HEADS`); `{i}` is the layer index. torch `Linear.weight` is
(out, in), hence `TRANSPOSE` onto Keras kernels.
"""

import dataclasses

from kbert.models.backbone import BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier
from kbert.presets.weight_map import TRANSPOSE, Weight

ENCODER_PREFIX = "bert."

EMBEDDINGS = (
    Weight("embeddings.word_embeddings.weight", "embeddings.token_embedding.embeddings"),
    Weight(
        "embeddings.position_embeddings.weight", "embeddings.position_embedding.embeddings"
    ),
    Weight(
        "embeddings.token_type_embeddings.weight", "embeddings.segment_embedding.embeddings"
    ),
    Weight("embeddings.LayerNorm.weight", "embeddings.layer_norm.gamma"),
    Weight("embeddings.LayerNorm.bias", "embeddings.layer_norm.beta"),
)
_L, _K = "encoder.layer.{i}.", "transformer_layers.{i}."
LAYER = (
    Weight(_L + "attention.self.query.weight", _K + "query.kernel", TRANSPOSE),
    Weight(_L + "attention.self.query.bias", _K + "query.bias"),
    Weight(_L + "attention.self.key.weight", _K + "key.kernel", TRANSPOSE),
    Weight(_L + "attention.self.key.bias", _K + "key.bias"),
    Weight(_L + "attention.self.value.weight", _K + "value.kernel", TRANSPOSE),
    Weight(_L + "attention.self.value.bias", _K + "value.bias"),
    Weight(_L + "attention.output.dense.weight", _K + "attention_output.kernel", TRANSPOSE),
    Weight(_L + "attention.output.dense.bias", _K + "attention_output.bias"),
    Weight(_L + "attention.output.LayerNorm.weight", _K + "attention_layer_norm.gamma"),
    Weight(_L + "attention.output.LayerNorm.bias", _K + "attention_layer_norm.beta"),
    Weight(_L + "intermediate.dense.weight", _K + "intermediate.kernel", TRANSPOSE),
    Weight(_L + "intermediate.dense.bias", _K + "intermediate.bias"),
    Weight(_L + "output.dense.weight", _K + "output_dense.kernel", TRANSPOSE),
    Weight(_L + "output.dense.bias", _K + "output_dense.bias"),
    Weight(_L + "output.LayerNorm.weight", _K + "output_layer_norm.gamma"),
    Weight(_L + "output.LayerNorm.bias", _K + "output_layer_norm.beta"),
)
POOLER = (
    Weight("pooler.dense.weight", "pooler.kernel", TRANSPOSE),
    Weight("pooler.dense.bias", "pooler.bias"),
)
_P, _M = "cls.predictions.", "masked_lm_head."
HEADS = {
    "masked_lm": (
        Weight(_P + "transform.dense.weight", _M + "transform.kernel", TRANSPOSE),
        Weight(_P + "transform.dense.bias", _M + "transform.bias"),
        Weight(_P + "transform.LayerNorm.weight", _M + "layer_norm.gamma"),
        Weight(_P + "transform.LayerNorm.bias", _M + "layer_norm.beta"),
        Weight(_P + "bias", _M + "output_bias", aliases=(_P + "decoder.bias",)),
    ),
    "next_sentence": (
        Weight("cls.seq_relationship.weight", "next_sentence_head.kernel", TRANSPOSE),
        Weight("cls.seq_relationship.bias", "next_sentence_head.bias"),
    ),
    "classifier": (
        Weight("classifier.weight", "classifier.kernel", TRANSPOSE),
        Weight("classifier.bias", "classifier.bias"),
    ),
    "span_classifier": (
        Weight("qa_outputs.weight", "span_classifier.kernel", TRANSPOSE),
        Weight("qa_outputs.bias", "span_classifier.bias"),
    ),
}
# A stored decoder must be the word embedding: kbert's decoder reads it.
TIED = {"cls.predictions.decoder.weight": "embeddings.word_embeddings.weight"}
# Buffers, not weights, that some checkpoints store.
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


@dataclasses.dataclass(frozen=True)
class HFTask:
    """How a kbert class appears as a transformers class.

    Example:
    >>> HF_TASKS[kbert.BertMaskedLM].architecture, HF_TASKS[kbert.BertMaskedLM].heads
    ('BertForMaskedLM', ('masked_lm',))
    """

    architecture: str
    heads: tuple = ()
    has_pooler: bool = True  # whether the transformers class has `bert.pooler`


HF_TASKS = {
    BertBackbone: HFTask("BertModel"),
    BertTextEmbedder: HFTask("BertModel"),
    BertMaskedLM: HFTask("BertForMaskedLM", ("masked_lm",), has_pooler=False),
    BertPretrainer: HFTask("BertForPreTraining", ("masked_lm", "next_sentence")),
    BertClassifier: HFTask("BertForSequenceClassification", ("classifier",)),
    BertTokenClassifier: HFTask(
        "BertForTokenClassification", ("classifier",), has_pooler=False
    ),
    BertQuestionAnswerer: HFTask(
        "BertForQuestionAnswering", ("span_classifier",), has_pooler=False
    ),
    BertMultipleChoice: HFTask("BertForMultipleChoice", ("classifier",)),
}
# The classifier head's `classifier.*` names are shared by three architectures.
CLASSIFIER_ARCHITECTURES = {
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForMultipleChoice",
}


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


def backbone_weights(num_layers, pooler=True):
    """The backbone's weight lines for `num_layers` layers, with or without the pooler.

    Example:
    >>> len(backbone_weights(num_layers=6))
    103
    """
    layers = tuple(
        dataclasses.replace(w, source=w.source.format(i=i), target=w.target.format(i=i))
        for i in range(num_layers)
        for w in LAYER
    )
    return EMBEDDINGS + layers + (POOLER if pooler else ())


def head_of(name):
    """The head a canonical name belongs to, or None for the encoder.

    Example:
    >>> head_of("cls.seq_relationship.bias")
    'next_sentence'
    """
    for head, weights in HEADS.items():
        if any(name in weight.names for weight in weights):
            return head
    if name in TIED:
        return "masked_lm"
    return None
