"""Loading original Google BERT directories (TF1 checkpoints).

A directory holds `bert_config.json`, `bert_model.ckpt.{index,data-*}` and
`vocab.txt`, as released by google-research/bert; fine-tuned outputs of its
`run_classifier.py` / `run_squad.py` (`model.ckpt-N`, a `checkpoint` file)
load too. TensorFlow is imported only inside these functions. Google kernels
are already (in, out); only the `output_weights` of the heads are (out, in).
"""

import glob
import json
import logging
import os

from kbert.models import MODEL_CLASSES
from kbert.presets import bert_layout
from kbert.presets.assemble import build_model, describe_model
from kbert.presets.hf_config import backbone_arguments
from kbert.presets.weight_map import AS_IS, TRANSPOSE, Weight, load_weights, variable_at

logger = logging.getLogger("kbert.presets")

CONFIG = "bert_config.json"
# The encoder's variables live under `bert/`; the heads' at the top level.
ENCODER_SCOPES = ("embeddings/", "encoder/", "pooler/")
# Training state a fine-tuned checkpoint may carry besides the weights.
TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v")
TRAINING_STATE = ("global_step", "good_steps", "loss_scale", "current_loss_scale")


def google_weight(line):
    """The `Weight` of a layout `(name, target)` line in a Google checkpoint.

    Google kernels are (in, out) like Keras'; only the heads' `output_weights`
    are (out, in).

    Example:
    >>> google_weight(("pooler/dense/kernel", "pooler.kernel")).source
    'bert/pooler/dense/kernel'
    >>> google_weight(("output_weights", "classifier.kernel")).transform.name
    'transposed'
    """
    name, target = line
    source = "bert/" + name if name.startswith(ENCODER_SCOPES) else name
    return Weight(source, target, TRANSPOSE if name.endswith("output_weights") else AS_IS)


def backbone_weights(num_layers, pooler=True):
    """The backbone's weight lines for `num_layers` layers.

    Example:
    >>> backbone_weights(12)[0].source
    'bert/embeddings/word_embeddings'
    """
    return [google_weight(line) for line in bert_layout.backbone_layout(num_layers, pooler)]


def head_weights(heads):
    """The weight lines of the given heads.

    Example:
    >>> [w.source for w in head_weights(["classifier"])]
    ['output_weights', 'output_bias']
    """
    return [google_weight(line) for line in bert_layout.head_layout(heads)]


_HEAD_OF = {
    weight.source: head for head in bert_layout.HEADS for weight in head_weights([head])
}


class TFCheckpointReader:
    """Reads a TF1 checkpoint's variables with `tf.train.load_checkpoint`.

    Example:
    >>> reader = TFCheckpointReader(os.path.join(google_dir, "bert_model.ckpt"))
    >>> reader.shape("bert/embeddings/word_embeddings")  # (vocabulary, hidden)
    (41, 8)
    """

    def __init__(self, prefix):
        import tensorflow as tf  # lazy: TF only for Google TF1 checkpoints

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
    >>> os.path.relpath(find_checkpoint(google_dir), google_dir)
    'bert_model.ckpt'
    """
    if os.path.isfile(os.path.join(directory, "checkpoint")):
        import tensorflow as tf  # lazy: TF only for Google TF1 checkpoints

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


def head_of(name):
    """The head a checkpoint variable belongs to, or None for the encoder.

    Example:
    >>> head_of("cls/seq_relationship/output_bias")
    'next_sentence'
    """
    return _HEAD_OF.get(name)


def _is_training_state(name):
    return name in TRAINING_STATE or name.endswith(TRAINING_STATE_SUFFIXES)


def is_google_directory(directory):
    """Whether a directory holds an original Google BERT checkpoint.

    Example:
    >>> is_google_directory(google_dir)
    True
    """
    return os.path.isfile(os.path.join(directory, CONFIG))


def load_google_preset(cls, directory, preprocessor, **overrides):
    """Builds `cls` from an original Google BERT directory; `from_preset` calls this.

    Example:
    >>> pretrainer = load_google_preset(kbert.BertPretrainer, google_dir, None)
    >>> pretrainer.backbone.num_layers
    2
    """
    config_path = os.path.join(directory, CONFIG)
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    backbone_config = backbone_arguments(config, config_path)
    reader = TFCheckpointReader(find_checkpoint(directory))
    names = reader.names()
    stored_heads = {head_of(name) for name in names} - {None}
    heads = tuple(head for head in cls.google_heads if head in stored_heads)
    stored = {}
    if "classifier" in heads:  # the head's rows are the classes
        stored["num_classes"] = reader.shape("output_weights")[0]
    model, head_fits = build_model(
        cls, backbone_config, preprocessor, overrides, stored, directory
    )
    if not head_fits:
        heads = ()
    backbone = getattr(model, "backbone", model)
    pooler = any(name.startswith("bert/pooler/") for name in names)
    if not pooler and cls.uses_pooler:
        logger.warning(
            "%s has no bert/pooler weights: `pooled_output` comes from a freshly "
            "initialized pooler.",
            reader.path,
        )
    bound = [
        (weight, variable_at(backbone, weight.target))
        for weight in backbone_weights(backbone.num_layers, pooler)
    ]
    bound += [(weight, variable_at(model, weight.target)) for weight in head_weights(heads)]
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
        ", ".join(h for h in cls.google_heads if h not in heads) or "none",
        ", ".join(sorted(stored_heads - set(heads))) or "none",
    )
    return model


def google_task(directory):
    """The task a Google directory's heads make: the model class whose
    `google_heads` it holds, the most of them (pretrainer over masked LM),
    else the backbone.

    Example:
    >>> google_task(google_dir)
    'pretrainer'
    """
    reader = TFCheckpointReader(find_checkpoint(directory))
    stored = {head_of(name) for name in reader.names()} - {None}
    fitting = [
        cls for cls in MODEL_CLASSES if cls.google_heads and set(cls.google_heads) <= stored
    ]
    if not fitting:
        return "backbone"
    return max(fitting, key=lambda cls: len(cls.google_heads)).task_name
