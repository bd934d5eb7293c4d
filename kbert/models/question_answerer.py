"""BertQuestionAnswerer: extractive QA, start and end logits per token."""

import keras
from keras import ops

from kbert.models.task import Task, backbone_inputs


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswerer(Task):
    """Extractive question answering (HF `BertForQuestionAnswering`).

    A dense layer with two units over `sequence_output` gives float32
    `start_logits` and `end_logits`, each (batch, seq). Train with
    `y={"start_logits": start_index, "end_logits": end_index}`.
    Weight paths: `span_classifier/{kernel,bias}` (HF `qa_outputs.*`).

    Example:
    >>> qa = kbert.BertQuestionAnswerer(backbone)
    >>> qa.predict({"token_ids": ids, "padding_mask": mask})["start_logits"].shape
    (batch, seq)
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.span_classifier = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=backbone.initializer_range
            ),
            dtype=backbone.dtype_policy,
            name="span_classifier",
        )
        # === Functional model ===
        inputs = backbone_inputs()
        sequence = backbone(inputs)["sequence_output"]
        logits = ops.cast(self.span_classifier(sequence), "float32")
        outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def default_loss(self):
        return {
            "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }
