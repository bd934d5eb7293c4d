"""The masked-LM head: transform, LayerNorm, decoder tied to the embedding."""

import keras
from keras import ops

from kbert.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="kbert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts vocabulary logits at chosen positions (HF `cls.predictions`).

    dense -> activation -> LayerNorm -> x @ token_embedding.T + output_bias.
    The decoder has no weight of its own: it reads the token embedding it is
    given, so the two stay tied through training and checkpoint conversion.
    Weight paths: `transform/{kernel,bias}`, `layer_norm/{gamma,beta}`,
    `output_bias`. Logits are float32 under mixed precision.

    Example:
    >>> embedding = keras.layers.Embedding(100, 8); embedding.build((None,))
    >>> head = MaskedLMHead(embedding, activation="gelu")
    >>> tuple(head(np.random.rand(2, 5, 8), np.array([[1, 3], [0, 4]])).shape)
    (2, 2, 100)
    """

    def __init__(
        self,
        token_embedding,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, inputs_shape, mask_positions_shape=None):
        vocabulary_size, hidden_dim = self.token_embedding.embeddings.shape
        self.transform = keras.layers.Dense(
            hidden_dim,
            activation=get_activation(self.activation),
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range
            ),
            dtype=self.dtype_policy,
            name="transform",
        )
        self.transform.build((None, hidden_dim))
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build((None, hidden_dim))
        self.output_bias = self.add_weight(
            shape=(vocabulary_size,), initializer="zeros", name="output_bias"
        )
        self.built = True

    def call(self, inputs, mask_positions=None):
        """`inputs` (batch, seq, hidden); `mask_positions` (batch, P) or None."""
        if mask_positions is not None:
            positions = ops.cast(mask_positions, "int32")[..., None]
            inputs = ops.take_along_axis(inputs, positions, axis=1)
        x = self.layer_norm(self.transform(inputs))
        embeddings = ops.cast(self.token_embedding.embeddings, x.dtype)
        logits = ops.matmul(x, ops.transpose(embeddings))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, inputs_shape, mask_positions_shape=None):
        length = (
            inputs_shape[1] if mask_positions_shape is None else mask_positions_shape[1]
        )
        return (inputs_shape[0], length, self.token_embedding.embeddings.shape[0])

    def get_config(self):
        # The tied embedding is not config: the task model passes it again.
        config = super().get_config()
        config.update(
            activation=self.activation,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
        )
        return config
