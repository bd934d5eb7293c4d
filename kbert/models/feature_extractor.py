"""BertFeatureExtractor: hidden states of chosen layers, as in the BERT paper."""

import keras
from keras import ops

from kbert.models.task import Task

COMBINE_MODES = ("concat", "sum", "mean", "stack")


@keras.saving.register_keras_serializable(package="kbert")
class BertFeatureExtractor(Task):
    """Token features from any encoder layers, combined.

    `layers` indexes the L+1 hidden states (0 = embeddings output, L = last
    layer; negative indices count from the end). The BERT paper's best
    feature-based NER setup is the concatenation of the last four:
    `layers=(-4, -3, -2, -1), combine="concat"` (the default), giving
    (batch, seq, 4 * hidden). `combine="stack"` returns (batch, n, seq,
    hidden). Shares the backbone's weights; adds none.

    Example:
    >>> extractor = kbert.BertFeatureExtractor(backbone, layers=(-3, -2, -1))
    >>> extractor.predict(token_inputs, verbose=0).shape  # (batch, seq, 3 * hidden_dim)
    (3, 10, 24)
    """

    def __init__(
        self,
        backbone,
        layers=(-4, -3, -2, -1),
        combine="concat",
        preprocessor=None,
        **kwargs,
    ):
        if combine not in COMBINE_MODES:
            raise ValueError(f"combine must be one of {COMBINE_MODES}; got {combine!r}.")
        count = backbone.num_layers + 1
        bad = [i for i in layers if not -count <= i < count]
        if bad or not layers:
            raise ValueError(
                f"layers must be non-empty indices into the {count} hidden states "
                f"(embeddings + {backbone.num_layers} layers); got {list(layers)}."
            )
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        # === Functional model === (the backbone's own graph, read mid-way)
        hidden_states = [backbone.embeddings.output] + [
            layer.output for layer in backbone.transformer_layers
        ]
        chosen = [ops.cast(hidden_states[i], "float32") for i in layers]
        if combine == "concat":
            features = ops.concatenate(chosen, axis=-1)
        elif combine == "stack":
            features = ops.stack(chosen, axis=1)
        else:
            features = ops.sum(ops.stack(chosen, axis=0), axis=0)
            if combine == "mean":
                features = features / len(chosen)
        # === Config ===
        self.layers_indices = tuple(int(i) for i in layers)
        self.combine = combine
        super().__init__(inputs=backbone.input, outputs=features, **kwargs)

    @property
    def output_sequence_axis(self):
        return 2 if self.combine == "stack" else 1  # stack: (batch, layer, token, dim)

    def default_loss(self):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(layers=list(self.layers_indices), combine=self.combine)
        return config
