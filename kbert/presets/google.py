"""Loading original Google BERT directories (TF1 checkpoints).

A directory holds `bert_config.json`, `bert_model.ckpt.{index,data-*}` and
`vocab.txt`, as released by google-research/bert; fine-tuned outputs of its
`run_classifier.py` / `run_squad.py` (`model.ckpt-N`, a `checkpoint` file)
load too. TensorFlow is imported only inside these functions. Google kernels
are already (in, out); only the `output_weights` of the heads are (out, in).
"""

import dataclasses
import glob
import json
import logging
import os

from kbert.models.backbone import BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.multiple_choice import BertMultipleChoice
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier
from kbert.presets.assemble import build_model, describe_model
from kbert.presets.hf_config import backbone_arguments
from kbert.presets.tasks import POOLER_USERS, base_class
from kbert.presets.weight_map import TRANSPOSE, Weight, load_weights, variable_at

logger = logging.getLogger("kbert.presets")

CONFIG = "bert_config.json"

EMBEDDINGS = (
    Weight("bert/embeddings/word_embeddings", "embeddings.token_embedding.embeddings"),
    Weight(
        "bert/embeddings/position_embeddings", "embeddings.position_embedding.embeddings"
    ),
    Weight(
        "bert/embeddings/token_type_embeddings", "embeddings.segment_embedding.embeddings"
    ),
    Weight("bert/embeddings/LayerNorm/gamma", "embeddings.layer_norm.gamma"),
    Weight("bert/embeddings/LayerNorm/beta", "embeddings.layer_norm.beta"),
)
_L, _K = "bert/encoder/layer_{i}/", "transformer_layers.{i}."
LAYER = (
    Weight(_L + "attention/self/query/kernel", _K + "query.kernel"),
    Weight(_L + "attention/self/query/bias", _K + "query.bias"),
    Weight(_L + "attention/self/key/kernel", _K + "key.kernel"),
    Weight(_L + "attention/self/key/bias", _K + "key.bias"),
    Weight(_L + "attention/self/value/kernel", _K + "value.kernel"),
    Weight(_L + "attention/self/value/bias", _K + "value.bias"),
    Weight(_L + "attention/output/dense/kernel", _K + "attention_output.kernel"),
    Weight(_L + "attention/output/dense/bias", _K + "attention_output.bias"),
    Weight(_L + "attention/output/LayerNorm/gamma", _K + "attention_layer_norm.gamma"),
    Weight(_L + "attention/output/LayerNorm/beta", _K + "attention_layer_norm.beta"),
    Weight(_L + "intermediate/dense/kernel", _K + "intermediate.kernel"),
    Weight(_L + "intermediate/dense/bias", _K + "intermediate.bias"),
    Weight(_L + "output/dense/kernel", _K + "output_dense.kernel"),
    Weight(_L + "output/dense/bias", _K + "output_dense.bias"),
    Weight(_L + "output/LayerNorm/gamma", _K + "output_layer_norm.gamma"),
    Weight(_L + "output/LayerNorm/beta", _K + "output_layer_norm.beta"),
)
POOLER = (
    Weight("bert/pooler/dense/kernel", "pooler.kernel"),
    Weight("bert/pooler/dense/bias", "pooler.bias"),
)
HEADS = {
    "masked_lm": (
        Weight("cls/predictions/transform/dense/kernel", "masked_lm_head.transform.kernel"),
        Weight("cls/predictions/transform/dense/bias", "masked_lm_head.transform.bias"),
        Weight(
            "cls/predictions/transform/LayerNorm/gamma", "masked_lm_head.layer_norm.gamma"
        ),
        Weight(
            "cls/predictions/transform/LayerNorm/beta", "masked_lm_head.layer_norm.beta"
        ),
        Weight("cls/predictions/output_bias", "masked_lm_head.output_bias"),
    ),
    "next_sentence": (
        Weight(
            "cls/seq_relationship/output_weights", "next_sentence_head.kernel", TRANSPOSE
        ),
        Weight("cls/seq_relationship/output_bias", "next_sentence_head.bias"),
    ),
    # run_classifier.py
    "classifier": (
        Weight("output_weights", "classifier.kernel", TRANSPOSE),
        Weight("output_bias", "classifier.bias"),
    ),
    # run_squad.py
    "span_classifier": (
        Weight("cls/squad/output_weights", "span_classifier.kernel", TRANSPOSE),
        Weight("cls/squad/output_bias", "span_classifier.bias"),
    ),
}
TASK_HEADS = {
    BertBackbone: (),
    BertTextEmbedder: (),
    BertMaskedLM: ("masked_lm",),
    BertPretrainer: ("masked_lm", "next_sentence"),
    BertClassifier: ("classifier",),
    BertTokenClassifier: (),
    BertQuestionAnswerer: ("span_classifier",),
    BertMultipleChoice: (),
}
# Training state a fine-tuned checkpoint may carry besides the weights.
TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v")
TRAINING_STATE = ("global_step", "good_steps", "loss_scale", "current_loss_scale")


class TFCheckpointReader:
    """Reads a TF1 checkpoint's variables with `tf.train.load_checkpoint`.

    Example:
    >>> TFCheckpointReader("uncased_L-2_H-128/bert_model.ckpt").shape(
    ...     "bert/embeddings/word_embeddings")
    (30522, 128)
    """

    def __init__(self, prefix):
        import tensorflow as tf

        self.path = prefix
        try:
            self._reader = tf.train.load_checkpoint(prefix)
            self._shapes = self._reader.get_variable_to_shape_map()
        except Exception as error:
            raise ValueError(
                f"{prefix}: not a readable TensorFlow checkpoint "
                f"({type(error).__name__}: {str(error).splitlines()[0]}). Its .index "
                "or .data files are probably truncated or corrupted."
            ) from error

    def names(self):
        return list(self._shapes)

    def shape(self, name):
        return tuple(self._shapes[name])

    def read(self, name):
        try:
            return self._reader.get_tensor(name)
        except Exception as error:
            raise ValueError(
                f"{self.path}: cannot read {name!r} ({type(error).__name__}); the "
                "checkpoint data is probably truncated or corrupted."
            ) from error

    def describe(self, name):
        return name


def find_checkpoint(directory):
    """The checkpoint prefix in a Google BERT directory.

    Example:
    >>> find_checkpoint("uncased_L-12_H-768_A-12")
    'uncased_L-12_H-768_A-12/bert_model.ckpt'
    """
    if os.path.isfile(os.path.join(directory, "checkpoint")):
        import tensorflow as tf

        state = tf.train.get_checkpoint_state(directory)
        # The state file often holds absolute paths from where training ran:
        # look for the named checkpoint here, where the directory is now.
        if state and state.model_checkpoint_path:
            prefix = os.path.join(directory, os.path.basename(state.model_checkpoint_path))
            if os.path.isfile(prefix + ".index"):
                return prefix
    indexes = sorted(glob.glob(os.path.join(directory, "*.index")))
    preferred = os.path.join(directory, "bert_model.ckpt.index")
    if preferred in indexes:
        return preferred.removesuffix(".index")
    if len(indexes) == 1:
        return indexes[0].removesuffix(".index")
    raise ValueError(
        f"{directory}: expected one TF checkpoint (bert_model.ckpt.index and "
        f".data-* files); found {[os.path.basename(i) for i in indexes] or 'none'}."
    )


def backbone_weights(num_layers, pooler=True):
    """The backbone's weight lines for `num_layers` layers.

    Example:
    >>> backbone_weights(12)[0].source
    'bert/embeddings/word_embeddings'
    """
    layers = tuple(
        dataclasses.replace(w, source=w.source.format(i=i), target=w.target.format(i=i))
        for i in range(num_layers)
        for w in LAYER
    )
    return EMBEDDINGS + layers + (POOLER if pooler else ())


def head_of(name):
    """The head a checkpoint variable belongs to, or None for the encoder.

    Example:
    >>> head_of("cls/seq_relationship/output_bias")
    'next_sentence'
    """
    for head, weights in HEADS.items():
        if any(name == weight.source for weight in weights):
            return head
    return None


def _is_training_state(name):
    return name in TRAINING_STATE or name.endswith(TRAINING_STATE_SUFFIXES)


def load_google_preset(cls, directory, preprocessor, **overrides):
    """Builds `cls` from an original Google BERT directory; `from_preset` calls this.

    Example:
    >>> pretrainer = load_google_preset(kbert.BertPretrainer, "uncased_L-2_H-128", None)
    """
    config_path = os.path.join(directory, CONFIG)
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    backbone_config = backbone_arguments(config, config_path)
    reader = TFCheckpointReader(find_checkpoint(directory))
    names = reader.names()
    klass = base_class(cls)
    stored_heads = {head_of(name) for name in names} - {None}
    heads = tuple(head for head in TASK_HEADS[klass] if head in stored_heads)
    stored = {}
    if "classifier" in heads:
        stored["num_classes"] = reader.shape("output_weights")[0]
    model, head_fits = build_model(
        cls, backbone_config, preprocessor, overrides, stored, directory
    )
    if not head_fits:
        heads = ()
    backbone = getattr(model, "backbone", model)
    pooler = any(name.startswith("bert/pooler/") for name in names)
    if not pooler and issubclass(cls, POOLER_USERS):
        logger.warning(
            "%s has no bert/pooler weights: `pooled_output` comes from a freshly "
            "initialized pooler.",
            reader.path,
        )
    bound = [
        (weight, variable_at(backbone, weight.target))
        for weight in backbone_weights(backbone.num_layers, pooler)
    ]
    bound += [
        (weight, variable_at(model, weight.target)) for h in heads for weight in HEADS[h]
    ]
    unused = [
        name
        for name in names
        if _is_training_state(name) or head_of(name) not in (None, *heads)
    ]
    load_weights(bound, reader, unused, f"{cls.__name__} {describe_model(model)}")
    logger.info(
        "%s: Google BERT checkpoint, %d layers, hidden %d, vocabulary %d; heads loaded: "
        "%s; freshly initialized: %s; ignored: %s.",
        directory,
        backbone.num_layers,
        backbone.hidden_dim,
        backbone.vocabulary_size,
        ", ".join(heads) or "none",
        ", ".join(h for h in TASK_HEADS[klass] if h not in heads) or "none",
        ", ".join(sorted(stored_heads - set(heads))) or "none",
    )
    return model


def google_task(directory):
    """The kbert task a Google directory's heads make: pretrainer, classifier, ...

    Example:
    >>> google_task("uncased_L-12_H-768_A-12")
    'pretrainer'
    """
    reader = TFCheckpointReader(find_checkpoint(directory))
    heads = {head_of(name) for name in reader.names()} - {None}
    if {"masked_lm", "next_sentence"} <= heads:
        return "pretrainer"
    for head, task in (
        ("masked_lm", "masked_lm"),
        ("classifier", "classifier"),
        ("span_classifier", "question_answerer"),
    ):
        if head in heads:
            return task
    return "backbone"
