"""BertClassifier: one label, many labels or a score per text (or text pair)."""

import keras
from keras import ops

from kbert.models.heads import classifier_head, label_names
from kbert.models.target_checks import TargetRule
from kbert.models.task import Task, backbone_inputs

PROBLEM_TYPES = {
    "single_label": "single_label",
    "single_label_classification": "single_label",
    "multi_label": "multi_label",
    "multi_label_classification": "multi_label",
    "regression": "regression",
}


@keras.saving.register_keras_serializable(package="kbert")
class BertClassifier(Task):
    """Sequence classification: dropout(pooled_output) -> dense logits.

    `problem_type` picks the default loss: `"single_label"` (softmax
    cross-entropy, integer labels), `"multi_label"` (sigmoid cross-entropy,
    multi-hot labels) or `"regression"` (mean squared error, `num_classes=1`).
    HF's `*_classification` spellings are accepted. Outputs float32 logits.
    Weight paths: `classifier/{kernel,bias}` (HF `classifier.*`).

    Example:
    >>> classifier = kbert.BertClassifier(backbone, num_classes=2)
    >>> classifier.predict(token_inputs, verbose=0).shape  # float32 logits
    (3, 2)
    >>> # classifier.fit(x=token_inputs, y=labels): AdamW and the loss are set
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "classifier"
    hf_architecture = "BertForSequenceClassification"
    hf_heads = ("classifier",)
    google_heads = ("classifier",)  # run_classifier.py's output_weights / output_bias
    uses_pooler = True
    pair_text_inputs = ("text", "text_pair")
    mediapipe_task = "TextClassifier"
    mediapipe_outputs = {"probabilities": "probability"}

    @property
    def agreement(self):
        # Regression has no classes; multi-label compares the set of labels.
        return {"regression": None, "multi_label": "label_set"}.get(
            self.problem_type, "argmax"
        )

    def export_outputs(self, outputs):
        named = {"logits": outputs}
        if self.problem_type == "multi_label":
            named["probabilities"] = ops.sigmoid(outputs)
        elif self.problem_type == "single_label":
            named["probabilities"] = ops.softmax(outputs, axis=-1)
        return named

    def __init__(
        self,
        backbone,
        num_classes,
        preprocessor=None,
        problem_type="single_label",
        dropout=0.1,
        id2label=None,
        **kwargs,
    ):
        if problem_type not in PROBLEM_TYPES:
            raise ValueError(
                f"problem_type must be one of {sorted(set(PROBLEM_TYPES.values()))}; "
                f"got {problem_type!r}."
            )
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout, self.classifier = classifier_head(
            backbone, num_classes, dropout
        )
        # === Functional model ===
        inputs = backbone_inputs()
        pooled = backbone(inputs)["pooled_output"]
        logits = ops.cast(self.classifier(self.output_dropout(pooled)), "float32")
        # === Config === (set before compile(), which reads problem_type)
        self.num_classes = num_classes
        self.problem_type = PROBLEM_TYPES[problem_type]
        self.dropout = dropout
        self.id2label = label_names(id2label)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def default_loss(self):
        if self.problem_type == "multi_label":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        if self.problem_type == "regression":
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def target_rules(self):
        if self.problem_type == "single_label":
            model = f"BertClassifier(num_classes={self.num_classes})"
            return TargetRule("class_ids", self.num_classes, model=model)
        model = (
            f"BertClassifier(num_classes={self.num_classes}, "
            f"problem_type={self.problem_type!r})"
        )
        kind = "multi_hot" if self.problem_type == "multi_label" else "finite"
        return TargetRule(kind, self.num_classes, model=model)

    def default_metrics(self):
        if self.problem_type == "multi_label":
            return [keras.metrics.BinaryAccuracy(threshold=0.0)]
        if self.problem_type == "regression":
            return [keras.metrics.MeanAbsoluteError()]
        return [keras.metrics.SparseCategoricalAccuracy()]

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            problem_type=self.problem_type,
            dropout=self.dropout,
            id2label=self.id2label,
        )
        return config
