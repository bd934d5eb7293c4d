"""BertMultipleChoice: pick one of several candidate texts."""

import keras
from keras import ops

from kbert.models.backbone import INPUT_NAMES
from kbert.models.heads import classifier_head
from kbert.models.target_checks import TargetRule
from kbert.models.task import Task, backbone_inputs
from kbert.utils.strings import string_list


@keras.saving.register_keras_serializable(package="kbert")
class FlattenChoices(keras.layers.Layer):
    """(batch, num_choices, seq) -> (batch * num_choices, seq), for any seq."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_spec(self, x):
        batch = None if x.shape[0] is None else x.shape[0] * x.shape[1]
        return keras.KerasTensor((batch, x.shape[-1]), dtype=x.dtype)


@keras.saving.register_keras_serializable(package="kbert")
class BertMultipleChoice(Task):
    """Multiple choice (HF `BertForMultipleChoice`).

    Inputs are (batch, num_choices, seq); every choice goes through the encoder
    as its own row, dropout(pooled_output) -> dense(1) scores it, and the
    output is float32 (batch, num_choices) logits.
    Weight paths: `classifier/{kernel,bias}` (HF `classifier.*`).

    With a `preprocessor` attached, `fit` / `evaluate` / `predict` take
    `x=(prompts, choices)`: a prompt per example and a list of `num_choices`
    candidate texts per example; each (prompt, choice) pair is packed as
    `[CLS] prompt [SEP] choice [SEP]` and the result reshaped to
    (batch, num_choices, seq). `y` is the index of the right choice.

    Example:
    >>> chooser = kbert.BertMultipleChoice(backbone, num_choices=4)
    >>> ones = np.ones((2, 4, 6), "int32")  # (batch, num_choices, seq)
    >>> inputs = {"token_ids": ones, "segment_ids": 0 * ones, "padding_mask": ones}
    >>> chooser.predict(inputs, verbose=0).shape
    (2, 4)
    >>> chooser = kbert.BertMultipleChoice(backbone, 2, preprocessor=preprocessor)
    >>> chooser.predict((["The sky is"], [["blue", "loud"]]), verbose=0).shape
    (1, 2)
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "multiple_choice"
    hf_architecture = "BertForMultipleChoice"
    hf_heads = ("classifier",)
    uses_pooler = True
    text_inputs = ("prompt", "choices")  # choices: (batch, num_choices) strings
    agreement = "argmax"

    def export_outputs(self, outputs):
        return {"logits": outputs, "probabilities": ops.softmax(outputs, axis=-1)}

    def __init__(self, backbone, num_choices, preprocessor=None, dropout=0.1, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout, self.classifier = classifier_head(backbone, 1, dropout)
        # === Functional model ===
        self.flatten_choices = FlattenChoices(name="flatten_choices")
        inputs = backbone_inputs(extra_dims=(num_choices,))
        flat = {name: self.flatten_choices(inputs[name]) for name in INPUT_NAMES}
        pooled = backbone(flat)["pooled_output"]
        scores = self.classifier(self.output_dropout(pooled))
        logits = ops.cast(ops.reshape(scores, (-1, num_choices)), "float32")
        # === Config ===
        self.num_choices = num_choices
        self.dropout = dropout
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """`(prompts, choices)` -> (batch, num_choices, seq) packed pairs."""
        import tensorflow as tf  # lazy: TF only for raw text

        if self.preprocessor is None:
            raise ValueError("This BertMultipleChoice has no preprocessor.")
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(
                "With a preprocessor, BertMultipleChoice takes x=(prompts, choices): "
                "a prompt per example and a list of num_choices texts per example."
            )
        prompts, choices = x
        if not tf.is_tensor(prompts):
            prompts = tf.constant(string_list(prompts, "prompts"), tf.string)
        if not tf.is_tensor(choices):
            rows = self._checked_choices(choices)
            choices = tf.constant(rows, tf.string, shape=[len(rows), self.num_choices])
        tf.debugging.assert_equal(
            tf.shape(choices)[1:],
            [self.num_choices],
            message=f"Each example needs exactly {self.num_choices} choices.",
        )
        pairs = self.preprocessor.preprocess(
            (tf.repeat(prompts, self.num_choices), tf.reshape(choices, [-1]))
        )
        length = self.preprocessor.sequence_length
        features = {
            name: tf.reshape(pairs[name], [-1, self.num_choices, length])
            for name in INPUT_NAMES
        }
        # Plain lists would read as nested structures once preprocessed.
        y, sample_weight = (
            None if value is None else tf.convert_to_tensor(value)
            for value in (y, sample_weight)
        )
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def _checked_choices(self, choices):
        """`choices` as a list of `num_choices` strings per example."""
        if isinstance(choices, str) or not hasattr(choices, "__len__"):
            raise ValueError(
                f"choices must hold a list of {self.num_choices} texts per example; "
                f"received {type(choices).__name__} {choices!r:.80}."
            )
        rows = []
        for index, row in enumerate(choices):
            if isinstance(row, str) or not hasattr(row, "__len__"):
                raise ValueError(
                    f"choices[{index}] is {type(row).__name__} {row!r:.80}; expected "
                    f"a list of {self.num_choices} texts."
                )
            row = string_list(list(row), f"choices[{index}]")
            if len(row) != self.num_choices:
                raise ValueError(
                    f"choices[{index}] holds {len(row)} texts; this model takes "
                    f"num_choices={self.num_choices}."
                )
            rows.append(row)
        return rows

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy()]

    def target_rules(self):
        model = f"BertMultipleChoice(num_choices={self.num_choices})"
        return TargetRule("class_ids", self.num_choices, model=model, noun="choice ids")

    def get_config(self):
        config = super().get_config()
        config.update(num_choices=self.num_choices, dropout=self.dropout)
        return config
