"""BertTokenClassifier: a label per word piece (NER-style tagging)."""

import keras
from keras import ops

from kbert.models.task import Task, backbone_inputs

IGNORE_LABEL = -100


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifier(Task):
    """Token classification: dropout(sequence_output) -> dense logits per token.

    Labels equal to -100 (HF's convention: padding and non-first word pieces)
    are ignored by the default loss. Outputs float32 (batch, seq, num_classes)
    logits. Weight paths: `classifier/{kernel,bias}` (HF `classifier.*`).

    Example:
    >>> tagger = kbert.BertTokenClassifier(backbone, num_classes=5)
    >>> tagger.predict({"token_ids": ids, "padding_mask": mask}).shape
    (batch, seq, 5)
    """

    def __init__(
        self, backbone, num_classes, preprocessor=None, dropout=0.1, id2label=None, **kwargs
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.classifier = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=backbone.initializer_range
            ),
            dtype=backbone.dtype_policy,
            name="classifier",
        )
        # === Functional model ===
        inputs = backbone_inputs()
        sequence = backbone(inputs)["sequence_output"]
        logits = ops.cast(self.classifier(self.output_dropout(sequence)), "float32")
        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.id2label = {int(k): v for k, v in id2label.items()} if id2label else None
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes, dropout=self.dropout, id2label=self.id2label
        )
        return config
