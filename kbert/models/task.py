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
        if self.built:
            self.optimizer.build(self.trainable_variables)

    # === Raw strings in: the preprocessor runs inside tf.data ===

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """One batch of raw samples -> model inputs (runs inside `tf.data`).

        Tasks whose inputs are not one text or one text pair override this.
        """
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

    def _pipeline(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """A `tf.data` pipeline that preprocesses raw samples on the fly."""
        import tensorflow as tf

        if isinstance(x, tf.data.Dataset):
            dataset = x
        else:
            data = keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
            dataset = tf.data.Dataset.from_tensor_slices(data)
            if shuffle:
                dataset = dataset.shuffle(
                    dataset.cardinality(), reshuffle_each_iteration=True
                )
            dataset = dataset.batch(batch_size or 32)
        return dataset.map(
            self.preprocess_samples, num_parallel_calls=tf.data.AUTOTUNE
        ).prefetch(tf.data.AUTOTUNE)

    def _raw_validation(self, validation_data, batch_size):
        if validation_data is None:
            return validation_data
        import tensorflow as tf

        if isinstance(validation_data, tf.data.Dataset):
            return (
                self._pipeline(validation_data)
                if self._takes_raw(validation_data)
                else validation_data
            )
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
        if not self._takes_raw(x):
            return validation_data
        return self._pipeline(x, y, sample_weight, batch_size=batch_size)

    def fit(
        self, x=None, y=None, batch_size=None, sample_weight=None, shuffle=True, **kwargs
    ):
        """`keras.Model.fit`; with a preprocessor attached, `x` holds raw strings."""
        if not self._takes_raw(x):
            return super().fit(
                x,
                y,
                batch_size=batch_size,
                sample_weight=sample_weight,
                shuffle=shuffle,
                **kwargs,
            )
        kwargs["validation_data"] = self._raw_validation(
            kwargs.get("validation_data"), batch_size
        )
        dataset = self._pipeline(x, y, sample_weight, batch_size, shuffle=shuffle)
        return super().fit(dataset, shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`; with a preprocessor attached, `x` holds raw strings."""
        # `fit` evaluates its (already preprocessed) validation data this way.
        cached = kwargs.get("_use_cached_eval_dataset", False)
        if cached or not self._takes_raw(x):
            return super().evaluate(
                x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs
            )
        return super().evaluate(self._pipeline(x, y, sample_weight, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; with a preprocessor attached, `x` holds raw strings."""
        if not self._takes_raw(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        return super().predict(self._pipeline(x, batch_size=batch_size), **kwargs)

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
