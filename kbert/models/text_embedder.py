"""BertTextEmbedder: one vector per text, as sentence-transformers makes it."""

import keras
import numpy as np

from kbert.layers.pooling import SentencePooling
from kbert.models.task import Task, backbone_inputs
from kbert.models.windows import mean_per_example


@keras.saving.register_keras_serializable(package="kbert")
class BertTextEmbedder(Task):
    """Sentence embeddings: pooled token vectors, optionally L2-normalized.

    `pooling` is `"mean"` (over real tokens only), `"cls"` or `"max"`. Output:
    float32 (batch, hidden_dim). Adds no weights to the backbone's. With
    `long_texts="windows"`, a text's embedding is its windows' pooled
    vectors averaged, weighted by their real token counts, then normalized
    when `normalize` is set.

    Example:
    >>> embedder = kbert.BertTextEmbedder(backbone, preprocessor=preprocessor)
    >>> embedder.predict(["A man is eating food."], verbose=0).shape  # (texts, hidden_dim)
    (1, 8)
    >>> # all-MiniLM-L6-v2, as sentence-transformers runs it:
    >>> # kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "text_embedder"
    agreement = "cosine"
    mediapipe_task = "TextEmbedder"
    mediapipe_outputs = {"embeddings": "embedding"}

    def export_outputs(self, outputs):
        return {"embeddings": outputs}

    def __init__(
        self, backbone, pooling="mean", normalize=True, preprocessor=None, **kwargs
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.pooling_layer = SentencePooling(
            pooling, normalize=normalize, dtype=backbone.dtype_policy, name="pooling"
        )
        # === Functional model ===
        inputs = backbone_inputs()
        sequence = backbone(inputs)["sequence_output"]
        embeddings = self.pooling_layer(sequence, inputs["padding_mask"])
        # === Config ===
        self.pooling = pooling
        self.normalize = normalize
        super().__init__(inputs=inputs, outputs=embeddings, **kwargs)

    def default_loss(self):
        return None

    def _window_model(self):
        """The pooled vectors before normalization, over the same layers."""
        if not self.normalize:
            return self
        if "_kbert_window_model" not in self.__dict__:  # not tracked by Keras
            inputs = backbone_inputs()
            sequence = self.backbone(inputs)["sequence_output"]
            pooling = SentencePooling(
                self.pooling, normalize=False, dtype=self.backbone.dtype_policy
            )
            model = keras.Model(inputs, pooling(sequence, inputs["padding_mask"]))
            self.__dict__["_kbert_window_model"] = model
        return self.__dict__["_kbert_window_model"]

    def join_windows(self, outputs, windows, count):
        tokens = windows["padding_mask"].sum(axis=-1)
        pooled = mean_per_example(outputs, windows["example_index"], count, tokens)
        if self.normalize:  # sentence-transformers' Normalize
            norm = np.sqrt(np.sum(pooled * pooled, axis=-1, keepdims=True))
            pooled = pooled / np.maximum(norm, 1e-12)
        return pooled

    def get_config(self):
        config = super().get_config()
        config.update(pooling=self.pooling, normalize=self.normalize)
        return config
