"""Token + position + segment embeddings, followed by LayerNorm and dropout."""

import keras
from keras import ops

from kbert.layers.sublayers import call_sublayer


@keras.saving.register_keras_serializable(package="kbert")
class BertEmbeddings(keras.layers.Layer):
    """The BERT input embedding.

    Sums a token, a learned absolute position and a segment embedding, then
    applies LayerNorm and dropout. Weight paths (what converters map onto):
    `token_embedding/embeddings`, `position_embedding/embeddings`,
    `segment_embedding/embeddings`, `layer_norm/{gamma,beta}`.

    Example:
    >>> layer = BertEmbeddings(vocabulary_size=100, hidden_dim=8)
    >>> tuple(layer(np.ones((2, 5), "int32"), np.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, token_ids_shape, segment_ids_shape=None):
        def embedding(rows, name):
            layer = keras.layers.Embedding(
                rows,
                self.hidden_dim,
                embeddings_initializer=keras.initializers.TruncatedNormal(
                    stddev=self.initializer_range
                ),
                dtype=self.dtype_policy,
                name=name,
            )
            layer.build((None, None))
            return layer

        self.token_embedding = embedding(self.vocabulary_size, "token_embedding")
        self.position_embedding = embedding(self.max_sequence_length, "position_embedding")
        self.segment_embedding = embedding(self.num_segments, "segment_embedding")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build((None, None, self.hidden_dim))
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = ops.shape(token_ids)[1]
        positions = ops.slice(
            ops.convert_to_tensor(self.position_embedding.embeddings),
            (0, 0),
            (sequence_length, self.hidden_dim),
        )
        # Sublayers through `.call()`: see `kbert.layers.sublayers`.
        x = (
            call_sublayer(self.token_embedding, token_ids)
            + ops.cast(positions, self.compute_dtype)[None]
            + call_sublayer(self.segment_embedding, segment_ids)
        )
        return self.dropout_layer.call(self.layer_norm.call(x), training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            hidden_dim=self.hidden_dim,
            max_sequence_length=self.max_sequence_length,
            num_segments=self.num_segments,
            dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
        )
        return config
