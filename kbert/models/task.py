"""Task: the base of every kbert task model (a backbone plus a head)."""

import keras

from kbert.models.backbone import INPUT_NAMES, BertBackbone, fastest_jit_compile
from kbert.models.functional_model import FunctionalModel
from kbert.models.preset_io import PresetMixin

DEFAULT_LEARNING_RATE = 5e-5
NO_WEIGHT_DECAY = ["bias", "gamma", "beta"]


def default_optimizer(learning_rate=DEFAULT_LEARNING_RATE, weight_decay=0.01):
    """AdamW as BERT fine-tuning uses it: no decay on LayerNorm and biases."""
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay, global_clipnorm=1.0
    )
    optimizer.exclude_from_weight_decay(var_names=NO_WEIGHT_DECAY)
    return optimizer


def backbone_inputs(extra_dims=()):
    """Symbolic token-id inputs, (batch, *extra_dims, seq) int32 each."""
    return {
        name: keras.Input(shape=tuple(extra_dims) + (None,), dtype="int32", name=name)
        for name in INPUT_NAMES
    }


class Task(PresetMixin, FunctionalModel):
    """A backbone plus a head, compiled with working defaults on creation.

    Subclasses build a functional graph and define `default_loss()` and
    `default_metrics()`. `compile()` fills in AdamW, the task's loss and
    metrics, and the fastest correct `jit_compile` for the backend.
    """

    backbone_cls = BertBackbone

    def __init__(self, *args, compile=True, **kwargs):
        super().__init__(*args, **kwargs)
        if compile:
            self.compile()

    def compile(
        self, optimizer="auto", loss="auto", metrics="auto", jit_compile="auto", **kwargs
    ):
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer,
            loss=self.default_loss() if loss == "auto" else loss,
            metrics=self.default_metrics() if metrics == "auto" else metrics,
            jit_compile=fastest_jit_compile() if jit_compile == "auto" else jit_compile,
            **kwargs,
        )

    def compile_from_config(self, config):
        # Keras skips this for models that override `compile()`; ours accepts
        # the saved arguments as they are, so a loaded model trains as saved.
        self.compile(**keras.saving.deserialize_keras_object(config))

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return None

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor)
            if self.preprocessor is not None
            else None,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"]
            )
        return cls(**config)
