"""BertPretrainer: masked LM plus next-sentence prediction."""

import keras
from keras import ops

from kbert.models.heads import dense_head
from kbert.models.masked_lm import masked_lm_head_for, masked_lm_loss
from kbert.models.task import Task, backbone_inputs


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(Task):
    """BERT pretraining (HF `BertForPreTraining`): MLM + NSP heads.

    Inputs: the backbone's plus `mask_positions` (batch, P). Outputs:
    `mlm_logits` (batch, P, vocabulary_size) and `nsp_logits` (batch, 2),
    float32. Train with `y={"mlm_logits": masked_ids, "nsp_logits": is_random}`
    and `sample_weight={"mlm_logits": mask_weights, "nsp_logits": ones}`: the
    MLM loss is normalized by the sum of the mask weights.
    Weight paths: `masked_lm_head/...` (HF `cls.predictions.*`),
    `next_sentence_head/{kernel,bias}` (HF `cls.seq_relationship.*`).

    Example:
    >>> pretrainer = kbert.BertPretrainer(backbone)
    >>> positions = np.array([[1, 2], [1, 3], [0, 2]])  # P = 2 predictions per row
    >>> inputs = {**token_inputs, "mask_positions": positions}
    >>> outputs = pretrainer.predict(inputs, verbose=0)
    >>> outputs["mlm_logits"].shape, outputs["nsp_logits"].shape
    ((3, 2, 41), (3, 2))
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "pretrainer"
    hf_architecture = "BertForPreTraining"
    hf_heads = ("masked_lm", "next_sentence")
    google_heads = ("masked_lm", "next_sentence")
    uses_pooler = True

    def __init__(self, backbone, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = masked_lm_head_for(backbone)
        self.next_sentence_head = dense_head(backbone, 2, "next_sentence_head")
        # === Functional model ===
        inputs = backbone_inputs()
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        backbone_outputs = backbone(
            {k: v for k, v in inputs.items() if k != "mask_positions"}
        )
        outputs = {
            "mlm_logits": self.masked_lm_head(
                backbone_outputs["sequence_output"], inputs["mask_positions"]
            ),
            "nsp_logits": ops.cast(
                self.next_sentence_head(backbone_outputs["pooled_output"]), "float32"
            ),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def default_loss(self):
        return {
            "mlm_logits": masked_lm_loss(),
            "nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }

    def compile(self, *args, weighted_metrics="auto", **kwargs):
        if weighted_metrics == "auto":
            weighted_metrics = {
                "mlm_logits": [
                    keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")
                ],
                "nsp_logits": [
                    keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")
                ],
            }
        super().compile(*args, weighted_metrics=weighted_metrics, **kwargs)
