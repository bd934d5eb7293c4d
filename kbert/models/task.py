"""Task: the base of every kbert task model (a backbone plus a head)."""

import keras
import numpy as np

from kbert.models.backbone import INPUT_NAMES, BertBackbone, fastest_jit_compile
from kbert.models.functional_model import FunctionalModel
from kbert.models.preset_io import PresetMixin
from kbert.optimization.optimizers import bert_optimizer

DEFAULT_LEARNING_RATE = 5e-5


def default_optimizer(learning_rate=DEFAULT_LEARNING_RATE, weight_decay=0.01):
    """AdamW as BERT fine-tuning uses it: no decay on LayerNorm and biases."""
    return bert_optimizer(learning_rate=learning_rate, weight_decay=weight_decay)


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
        if self.built:
            self.optimizer.build(self.trainable_variables)

    # === Raw samples in ===
    # In-memory samples (lists, arrays) are preprocessed once, eagerly, and fed
    # as arrays: no tracing of the tokenizer graph per call, and Keras batches
    # and shuffles them as usual. A `tf.data.Dataset` of raw samples gets the
    # preprocessor mapped over it instead (for data that does not fit in memory).

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Raw samples -> model inputs, eagerly or inside `tf.data`.

        Tasks whose inputs are not one text or one text pair override this.
        """
        # Labels as arrays: a Python list would be split into scalars later.
        y, sample_weight = (
            np.asarray(v) if isinstance(v, list) else v for v in (y, sample_weight)
        )
        return self.preprocessor(x, y, sample_weight)

    def _takes_raw(self, x):
        """True when `x` holds raw samples for the preprocessor, not model inputs."""
        if self.preprocessor is None or isinstance(x, dict):
            return False
        if hasattr(x, "element_spec"):  # a tf.data.Dataset
            spec = x.element_spec
            first = spec[0] if isinstance(spec, tuple) else spec
            return not isinstance(first, dict)
        return True

    def _preprocessed(self, x, y=None, sample_weight=None):
        """`(x, y, sample_weight)` of model inputs from raw samples."""
        if hasattr(x, "element_spec"):
            import tensorflow as tf  # lazy: TF only for raw text

            mapped = x.map(self.preprocess_samples, num_parallel_calls=tf.data.AUTOTUNE)
            return mapped.prefetch(tf.data.AUTOTUNE), None, None
        data = keras.tree.map_structure(
            np.asarray, self.preprocess_samples(x, y, sample_weight)
        )
        return keras.utils.unpack_x_y_sample_weight(data)

    def _preprocessed_validation(self, validation_data):
        if hasattr(validation_data, "element_spec"):
            if self._takes_raw(validation_data):
                return self._preprocessed(validation_data)[0]
            return validation_data
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
        if not self._takes_raw(x):
            return validation_data
        return keras.utils.pack_x_y_sample_weight(*self._preprocessed(x, y, sample_weight))

    def fit(
        self, x=None, y=None, batch_size=None, sample_weight=None, shuffle=True, **kwargs
    ):
        """`keras.Model.fit`; with a preprocessor attached, `x` may hold raw strings."""
        if self._takes_raw(x):
            x, y, sample_weight = self._preprocessed(x, y, sample_weight)
        if kwargs.get("validation_data") is not None and self.preprocessor is not None:
            kwargs["validation_data"] = self._preprocessed_validation(
                kwargs["validation_data"]
            )
        if hasattr(x, "element_spec"):
            shuffle = False  # a dataset shuffles itself
        return super().fit(
            x,
            y,
            batch_size=batch_size,
            sample_weight=sample_weight,
            shuffle=shuffle,
            **kwargs,
        )

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`; with a preprocessor, `x` may hold raw strings."""
        # `fit` evaluates its (already preprocessed) validation data this way.
        if not kwargs.get("_use_cached_eval_dataset") and self._takes_raw(x):
            x, y, sample_weight = self._preprocessed(x, y, sample_weight)
        return super().evaluate(
            x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs
        )

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; with a preprocessor attached, `x` may hold raw strings."""
        if self._takes_raw(x):
            x = self._preprocessed(x)[0]
        return super().predict(x, batch_size=batch_size, **kwargs)

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
