"""One post-LayerNorm BERT encoder layer: self-attention, then feed-forward."""

import keras
from keras import ops

from kbert.layers.activations import get_activation
from kbert.layers.fused_projection import FusedProjection
from kbert.layers.sublayers import call_sublayer
from kbert.layers.torch_attention import torch_inference_attention


def _with_query_length(attention_mask, query):
    """On JAX, a (batch, 1, 1, keys) mask broadcast to (batch, 1, queries, keys):
    cuDNN's fused attention (JAX on a GPU) refuses a mask without the query
    length ("Bias must have same seq length as QKV") and Keras then falls back
    to XLA's unfused attention. XLA fuses the broadcast; elsewhere the mask
    stays as it is."""
    if (
        attention_mask is None
        or keras.backend.backend() != "jax"
        or len(attention_mask.shape) != 4
        or attention_mask.shape[2] != 1
    ):
        return attention_mask
    shape = ops.shape(attention_mask)
    return ops.broadcast_to(
        attention_mask, (shape[0], shape[1], ops.shape(query)[1], shape[3])
    )


def _large_negative(dtype):
    # Written with `where`, never added, so float16 cannot overflow to -inf.
    return -6.0e4 if dtype == "float16" else -1.0e9


@keras.saving.register_keras_serializable(package="kbert")
class BertTransformerLayer(keras.layers.Layer):
    """A BERT encoder layer (post-LN), weight-compatible with HF `BertLayer`.

    Attention runs through `keras.ops.dot_product_attention` (the backend's
    fused kernel). The explicit softmax path is taken only when attention
    probabilities are needed: attention dropout while training, or
    `return_attention_scores=True`.

    Sublayers (stable weight paths): `query`, `key`, `value`,
    `attention_output`, `attention_layer_norm`, `intermediate`, `output`,
    `output_layer_norm`; each Dense has `kernel` (in, out) and `bias`.

    Example:
    >>> layer = BertTransformerLayer(num_heads=2, intermediate_dim=16)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> mask = np.ones((2, 1, 1, 5), bool)
    >>> tuple(layer(x, attention_mask=mask).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        hidden_activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.hidden_activation = hidden_activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} is not divisible by num_heads={self.num_heads}."
            )
        self.head_dim = hidden_dim // self.num_heads

        def dense(units, name, activation=None):
            layer = keras.layers.Dense(
                units,
                activation=activation,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=self.initializer_range
                ),
                dtype=self.dtype_policy,
                name=name,
            )
            return layer

        def layer_norm(name):
            return keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )

        self.query = dense(hidden_dim, "query")
        self.key = dense(hidden_dim, "key")
        self.value = dense(hidden_dim, "value")
        self.attention_output = dense(hidden_dim, "attention_output")
        self.attention_layer_norm = layer_norm("attention_layer_norm")
        self.intermediate = dense(
            self.intermediate_dim,
            "intermediate",
            activation=get_activation(self.hidden_activation),
        )
        self.output_dense = dense(hidden_dim, "output")
        self.output_layer_norm = layer_norm("output_layer_norm")
        for layer in (self.query, self.key, self.value, self.attention_output):
            layer.build(input_shape)
        self.attention_layer_norm.build(input_shape)
        self.intermediate.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_dim,))
        self.output_layer_norm.build(input_shape)
        self.probabilities_dropout = keras.layers.Dropout(
            self.attention_dropout, dtype=self.dtype_policy
        )
        self.hidden_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self._qkv_projection = FusedProjection((self.query, self.key, self.value))
        self._linear = {
            dense: FusedProjection((dense,))
            for dense in (self.attention_output, self.intermediate, self.output_dense)
        }
        self.built = True

    def _apply_dense(self, dense, x):
        """`dense` on `x`: torch's `linear` in torch inference, else as Keras runs it."""
        outputs = self._linear[dense](x)
        return call_sublayer(dense, x) if outputs is None else outputs

    def _split_heads(self, x):
        return ops.reshape(x, ops.shape(x)[:-1] + (self.num_heads, self.head_dim))

    def _explicit_attention(self, query, key, value, attention_mask, training):
        scores = ops.einsum("btnh,bsnh->bnts", query, key)
        scores = ops.cast(scores, "float32") * (1.0 / self.head_dim**0.5)
        if attention_mask is not None:
            scores = ops.where(attention_mask, scores, _large_negative("float32"))
        probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        dropped = self.probabilities_dropout.call(probabilities, training=training)
        return ops.einsum("bnts,bsnh->btnh", dropped, value), probabilities

    def call(self, x, attention_mask=None, training=None, return_attention_scores=False):
        """`attention_mask`: boolean, broadcastable to (batch, heads, q, k)."""
        # Sublayers run through `.call()` (Dense: `call_sublayer`, which
        # takes the quantized path of a quantized layer), not `__call__`:
        # see `kbert.layers.sublayers`.
        qkv = self._qkv_projection(x)  # one matmul in torch inference, else None
        if qkv is None:
            query, key, value = (
                self._split_heads(call_sublayer(dense, x))
                for dense in (self.query, self.key, self.value)
            )
        else:
            qkv = ops.reshape(qkv, ops.shape(x)[:-1] + (3, self.num_heads, self.head_dim))
            query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        dropout_active = training and self.attention_dropout > 0
        if return_attention_scores or dropout_active:
            context, probabilities = self._explicit_attention(
                query, key, value, attention_mask, training
            )
        else:
            negative = _large_negative(self.compute_dtype)
            context = torch_inference_attention(query, key, value, attention_mask, negative)
            if context is None:
                context = ops.dot_product_attention(
                    query, key, value, mask=_with_query_length(attention_mask, query)
                )
            probabilities = None
        context = ops.reshape(context, ops.shape(x))
        attention = self.hidden_dropout.call(
            self._apply_dense(self.attention_output, context), training=training
        )
        x = self.attention_layer_norm.call(x + attention)
        feed_forward = self._apply_dense(
            self.output_dense, self._apply_dense(self.intermediate, x)
        )
        feed_forward = self.hidden_dropout.call(feed_forward, training=training)
        x = self.output_layer_norm.call(x + feed_forward)
        if return_attention_scores:
            return x, probabilities
        return x

    def compute_output_spec(
        self, x, attention_mask=None, training=None, return_attention_scores=False
    ):
        output = keras.KerasTensor(x.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        batch, length = x.shape[0], x.shape[1]
        scores = (batch, self.num_heads, length, length)
        return output, keras.KerasTensor(scores, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_dim=self.intermediate_dim,
            hidden_activation=self.hidden_activation,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
        )
        return config
