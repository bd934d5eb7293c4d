"""BertBackbone: the BERT encoder, from token ids to contextual vectors."""

import keras
import numpy as np
from keras import ops

from kbert.layers.embeddings import BertEmbeddings
from kbert.layers.sublayers import call_sublayer
from kbert.layers.transformer import BertTransformerLayer
from kbert.models.functional_model import FunctionalModel
from kbert.models.id_ranges import IdRangeCheckedModel, check_id_ranges, check_id_shapes
from kbert.models.jax_state import JaxStateRestoringModel
from kbert.models.keras_export import KerasExportable
from kbert.models.lora import LoraBackbone, LoraModel
from kbert.models.preset_io import PresetMixin
from kbert.models.quantization import (
    QuantizableModel,
    quantizable_layers,
    restore_activation_quantizers,
)
from kbert.utils.file_errors import unreadable
from kbert.utils.precision_speed import warn_if_slower_than_float32

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def attention_mask_from_padding(padding_mask):
    """(batch, seq) 1/0 padding mask -> boolean (batch, 1, 1, seq) key mask.

    A row that is all padding attends everywhere instead of nowhere: its output
    is never used, but a fully masked softmax is NaN in every float type.
    """
    mask = ops.cast(padding_mask, "bool")
    empty_row = ops.logical_not(ops.any(mask, axis=-1, keepdims=True))
    # expand_dims, not [:, None, None, :]: the strided slice does not convert
    # to TFLite when batch and sequence are both dynamic.
    return ops.expand_dims(ops.expand_dims(ops.logical_or(mask, empty_row), 1), 1)


@keras.saving.register_keras_serializable(package="kbert")
class BertBackbone(
    PresetMixin,
    QuantizableModel,
    LoraBackbone,
    LoraModel,
    KerasExportable,
    IdRangeCheckedModel,
    JaxStateRestoringModel,
    FunctionalModel,
):
    """The BERT encoder: embeddings, post-LN transformer layers and pooler.

    Inputs are a dict of `token_ids`, `segment_ids` and `padding_mask`
    (1 = real token), each (batch, seq) integers; `segment_ids` and
    `padding_mask` default to zeros and ones when left out. Ids outside
    `[0, vocabulary_size)` / `[0, num_segments)` raise a `ValueError` in
    `__call__`, `fit`, `evaluate` and `predict` on concrete arrays (see
    `kbert.models.id_ranges.check_id_ranges`; not inside a graph you
    compile). Outputs are a dict of `sequence_output` (batch, seq, hidden)
    and `pooled_output` (batch, hidden) = tanh(dense([CLS])), plus
    `hidden_states` (embeddings output and one per layer, L+1 tensors) when
    `output_hidden_states=True`, and `attentions` (one (batch, heads, seq,
    seq) probability tensor per layer, as transformers'
    `output_attentions=True` gives them) when `output_attentions=True`; that
    takes the explicit-softmax attention instead of the fused kernel, so it
    is off by default.

    Weight paths: `embeddings/...` (see `BertEmbeddings`),
    `transformer_layer_{i}/...` (see `BertTransformerLayer`), `pooler/{kernel,bias}`.

    Example:
    >>> backbone = kbert.BertBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
    ...     intermediate_dim=16)
    >>> out = backbone({"token_ids": np.array([[2, 5, 3, 0]]),
    ...                 "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((1, 4, 8), (1, 8))
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "backbone"
    uses_pooler = True
    sequence_outputs = ("sequence_output",)
    agreement = "cosine"
    optional_inputs = ("segment_ids", "padding_mask")  # `standardize_inputs` fills them

    def export_outputs(self, outputs):
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
        }

    def __init__(
        self,
        vocabulary_size=30522,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        intermediate_dim=3072,
        hidden_activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        output_hidden_states=False,
        output_attentions=False,
        dtype=None,
        quantized_activations=(),
        **kwargs,
    ):
        # A `DTypePolicyMap` (a quantized backbone's config) reaches every
        # sublayer, which takes its own layer path's policy from it.
        # === Layers ===
        self.embeddings = BertEmbeddings(
            vocabulary_size=vocabulary_size,
            hidden_dim=hidden_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        self.transformer_layers = [
            BertTransformerLayer(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                hidden_activation=hidden_activation,
                dropout=dropout,
                attention_dropout=attention_dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooler = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=dtype,
            name="pooler",
        )

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in INPUT_NAMES
        }
        outputs = self._encode(inputs, None, output_hidden_states, output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        if isinstance(dtype, keras.dtype_policies.DTypePolicyMap):
            self.dtype_policy = dtype.default_policy
            restore_activation_quantizers(self, quantized_activations)
        elif dtype is not None:  # a functional model does not keep `dtype` itself
            self.dtype_policy = keras.dtype_policies.get(dtype)
        warn_if_slower_than_float32(self.dtype_policy)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.hidden_activation = hidden_activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.jit_compile = fastest_jit_compile(self.dtype_policy, training=False)

    @property
    def token_embedding(self):
        """The token `Embedding` layer; the masked-LM decoder is tied to it."""
        return self.embeddings.token_embedding

    def __call__(self, inputs, *args, **kwargs):
        inputs = self.standardize_inputs(inputs)
        # Concrete inputs only: in `call` (JAX `fit`/`predict`) they are traced.
        check_id_ranges(inputs, self.vocabulary_size, self.num_segments)
        if not args and self._eager_torch_inference(inputs, kwargs):
            # Keras' `__call__` bookkeeping (input specs rebuilt, losses
            # cleared over every sublayer, call context) costs about what a
            # transformer layer does at batch 1; here it has nothing to do.
            tensors = {name: ops.convert_to_tensor(value) for name, value in inputs.items()}
            return self.call(tensors, training=False)
        return super().__call__(inputs, *args, **kwargs)

    def _eager_torch_inference(self, inputs, kwargs):
        """Torch, autograd off, concrete inputs, not training, no autocast."""
        if keras.backend.backend() != "torch" or set(kwargs) - {"training"}:
            return False
        import torch  # lazy: torch only on the torch backend

        return (
            not torch.is_grad_enabled()
            and not kwargs.get("training")
            and self.compute_dtype == self.variable_dtype
            and not any(isinstance(v, keras.KerasTensor) for v in inputs.values())
        )

    def call(self, inputs, training=None, mask=None):
        # `fit`/`predict` on JAX reach `call` without `__call__`. The encoder
        # runs its sublayers' `call()` directly rather than walking the
        # functional graph: the same computation (`_encode` built that
        # graph), without ~15 graph nodes and 8 nested `__call__`s of Python
        # per batch, which is most of the torch backend's small-batch latency.
        inputs = self.standardize_inputs(inputs)
        return self._encode(
            inputs, training, self.output_hidden_states, self.output_attentions, direct=True
        )

    def _encode(
        self, inputs, training, output_hidden_states, output_attentions, direct=False
    ):
        """Embeddings, transformer layers and pooler on an input dict.

        With `direct=False` (in `__init__`, on symbolic inputs) sublayers are
        called as layers, which records the functional graph; with
        `direct=True` (in `call`, where this model's `__call__` has already
        cast the inputs, opened the autocast scope and resolved `training`)
        through their `call()`.
        """

        def run(layer, *args, **kwargs):
            return (
                call_sublayer(layer, *args, **kwargs) if direct else layer(*args, **kwargs)
            )

        x = run(
            self.embeddings, inputs["token_ids"], inputs["segment_ids"], training=training
        )
        attention_mask = attention_mask_from_padding(inputs["padding_mask"])
        hidden_states, attentions = [x], []
        for layer in self.transformer_layers:
            x = run(
                layer,
                x,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=output_attentions,
            )
            if output_attentions:
                x, probabilities = x
                attentions.append(probabilities)
            hidden_states.append(x)
        outputs = {"sequence_output": x, "pooled_output": run(self.pooler, x[:, 0, :])}
        if output_hidden_states:
            outputs["hidden_states"] = hidden_states
        if output_attentions:
            outputs["attentions"] = attentions
        return outputs

    def standardize_inputs(self, inputs):
        """Checks an input dict and fills in default segment ids and mask.

        Raises a `ValueError` naming the input and the expected shape instead
        of letting a backend fail deep inside the graph.
        """
        if not isinstance(inputs, dict):
            raise ValueError(
                "BertBackbone takes a dict with keys "
                f"{list(INPUT_NAMES)}, each (batch, sequence_length) integers; "
                f"got {type(inputs).__name__}."
            )
        unknown = sorted(set(inputs) - set(INPUT_NAMES))
        if unknown or "token_ids" not in inputs:
            raise ValueError(
                f"BertBackbone inputs must have keys {list(INPUT_NAMES)} "
                f"('token_ids' required); got {sorted(inputs)}."
            )
        check_id_shapes(inputs, 2, self.max_sequence_length)
        inputs = {
            name: value if hasattr(value, "dtype") else np.asarray(value)
            for name, value in inputs.items()
        }
        token_ids = inputs["token_ids"]
        numpy_input = isinstance(token_ids, np.ndarray)
        if "segment_ids" not in inputs:
            zeros_like = np.zeros_like if numpy_input else ops.zeros_like
            inputs["segment_ids"] = zeros_like(token_ids)
        if "padding_mask" not in inputs:
            ones_like = np.ones_like if numpy_input else ops.ones_like
            inputs["padding_mask"] = ones_like(token_ids)
        expected = tuple(token_ids.shape)
        for name in INPUT_NAMES:
            value = inputs[name]
            dtype = keras.backend.standardize_dtype(value.dtype)
            if not (dtype.startswith("int") or dtype.startswith("uint") or dtype == "bool"):
                raise ValueError(
                    f"Input {name!r} must be integers, shape (batch, sequence_length); "
                    f"got dtype {dtype}."
                )
            shape = tuple(value.shape)
            if len(shape) != 2 or any(
                a is not None and b is not None and a != b for a, b in zip(shape, expected)
            ):
                raise ValueError(
                    f"Input {name!r} must have shape (batch, sequence_length) = "
                    f"{expected} like 'token_ids'; got {shape}."
                )
        return inputs

    def load_weights(self, filepath, *args, **kwargs):
        """`keras.Model.load_weights`; a missing, truncated or damaged file is a
        `FileError` (an `OSError` and a `ValueError`) naming it."""
        try:
            return super().load_weights(filepath, *args, **kwargs)
        except OSError as error:
            raise unreadable(filepath, error) from None

    def _dtype_config(self):
        """The dtype policy, or a `DTypePolicyMap` naming each quantized layer."""
        quantized = [layer for layer in quantizable_layers(self) if layer.quantization_mode]
        if not quantized:
            return keras.dtype_policies.serialize(self.dtype_policy)
        policy_map = keras.dtype_policies.DTypePolicyMap(
            default_policy=self.dtype_policy,
            policy_map={layer.path: layer.dtype_policy for layer in quantized},
        )
        return keras.dtype_policies.serialize(policy_map)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self._dtype_config(),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "hidden_activation": self.hidden_activation,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "output_hidden_states": self.output_hidden_states,
            "output_attentions": self.output_attentions,
            "quantized_activations": sorted(
                path for path, active in self.quantized_layer_paths().items() if active
            ),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)


# XLA's compile of each length bucket pays back only after thousands of rows
# (README "Tests"; benchmarks/predict_compile.py): below this many rows
# predicted by one model, TensorFlow's `predict` runs without it.
XLA_AFTER_ROWS = 8192


def fastest_jit_compile(dtype_policy=None, training=True, rows=None):
    """The fastest correct `jit_compile` per backend, precision and use.

    - torch: eager (`torch.compile` recompiles for every new sequence length).
    - JAX: XLA, its only compiler.
    - TensorFlow on a GPU: XLA.
    - TensorFlow on a CPU: XLA for float32 inference of a long job (`rows`,
      the rows a model will have predicted once this call ends, at least
      `XLA_AFTER_ROWS`; None: a job of unknown, long size): it fuses what
      oneDNN runs op by op (Keras leaves it off on CPU) but compiles each
      length bucket first, which pays back only over thousands of rows.
      Not for training, where each length bucket compiles a training step
      that costs more than XLA saves over a fine-tune, nor for
      bfloat16/float16, which XLA's CPU backend computes at float32 speed or
      below while oneDNN uses the CPU's bf16 units (AVX512-BF16, AMX). See
      `benchmarks/predict_compile.py`, `benchmarks/end_to_end.py` and
      `benchmarks/matmul_limit.py`.

    Example:
    >>> fastest_jit_compile("float32", training=False) == (
    ...     keras.backend.backend() != "torch")
    True
    >>> fastest_jit_compile("float32", training=False, rows=100) == (
    ...     keras.backend.backend() == "jax")
    True
    """
    backend = keras.backend.backend()
    if backend == "torch":
        return False
    if backend == "jax":
        return True
    import tensorflow as tf  # lazy: the TensorFlow backend, loaded already

    if tf.config.list_physical_devices("GPU"):
        return True
    compute_dtype = keras.dtype_policies.get(dtype_policy or "float32").compute_dtype
    long_job = rows is None or rows >= XLA_AFTER_ROWS
    return compute_dtype == "float32" and not training and long_job
