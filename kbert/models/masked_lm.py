"""BertMaskedLM: predict the tokens at masked positions."""

import keras

from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.models.target_checks import TargetRule
from kbert.models.task import Task, backbone_inputs


def masked_lm_head_for(backbone):
    return MaskedLMHead(
        backbone.token_embedding,
        activation=backbone.hidden_activation,
        layer_norm_epsilon=backbone.layer_norm_epsilon,
        initializer_range=backbone.initializer_range,
        dtype=backbone.dtype_policy,
        name="masked_lm_head",
    )


def masked_lm_loss():
    """Cross-entropy averaged over the weights of real predictions.

    With `sample_weight=masked_lm_weights`, padding predictions count for
    nothing and the mean is over real ones, as in the original BERT.
    """
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )


@keras.saving.register_keras_serializable(package="kbert")
class BertMaskedLM(Task):
    """Masked language model (HF `BertForMaskedLM`), decoder tied to embeddings.

    Inputs: the backbone's plus `mask_positions` (batch, P) int32; output:
    float32 (batch, P, vocabulary_size) logits. Train with `y=masked ids`,
    `sample_weight=mask weights`. Weight paths: `masked_lm_head/...`
    (see `MaskedLMHead`; HF `cls.predictions.*`).

    Example:
    >>> mlm = kbert.BertMaskedLM(backbone)
    >>> positions = np.array([[3], [1], [2]])
    >>> mlm.predict({**token_inputs, "mask_positions": positions}, verbose=0).shape
    (3, 1, 41)
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "masked_lm"
    hf_architecture = "BertForMaskedLM"
    hf_heads = ("masked_lm",)
    hf_pooler = False
    google_heads = ("masked_lm",)
    position_outputs = ("logits",)
    agreement = "argmax"

    def export_outputs(self, outputs):
        return {"logits": outputs}

    def __init__(self, backbone, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = masked_lm_head_for(backbone)
        # === Functional model ===
        inputs = backbone_inputs()
        inputs["mask_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="mask_positions"
        )
        backbone_outputs = backbone(
            {k: v for k, v in inputs.items() if k != "mask_positions"}
        )
        logits = self.masked_lm_head(
            backbone_outputs["sequence_output"], inputs["mask_positions"]
        )
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def default_loss(self):
        return masked_lm_loss()

    target_positions = "mask_positions"

    def target_rules(self):
        size = self.backbone.vocabulary_size
        model = f"BertMaskedLM(vocabulary_size={size})"
        return TargetRule("class_ids", size, per_token=True, model=model, noun="token ids")

    def compile(self, *args, weighted_metrics="auto", **kwargs):
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy()]
        super().compile(*args, weighted_metrics=weighted_metrics, **kwargs)
