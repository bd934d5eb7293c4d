"""Keras' `model.quantize(mode)` on kbert models: which layers, which scheme.

The rule (one place, for every kbert model):

- Quantized: every Dense of the encoder (query, key, value, attention
  output, intermediate, output; and the pooler) and the token and segment
  embeddings: per-output-channel int8 (or int4) weights with float scales.
- Activations stay in float (weight-only quantization) unless the caller
  passes a Keras `QuantizationConfig` or calibration texts: BERT's
  activations have outlier channels (a few hidden dimensions hundreds of
  times larger than the rest, the reason onnxruntime's static int8 flips
  predictions, see `kbert.export.onnx.outliers`), and Keras' default
  per-token int8 activations round the other channels of those tokens to
  zero.
- Float on purpose: LayerNorms (no quantized form in Keras), the position
  embedding (its table is sliced by length, not looked up), a token
  embedding the masked-LM decoder shares (the decoder multiplies by the
  whole float table), the task heads (a few thousand weights that
  fine-tuning changed most) and the tokenizer (no weights).
- Refused by name: `float8` (Keras' float8 keeps delayed-scaling statistics
  that only training steps calibrate: quantizing a trained model leaves
  every scale at 1) and `gptq`/`awq` (they need a layer structure and a
  calibration dataset kbert does not build).

With `calibration_texts`, kbert quantizes activations too (Keras' dynamic
per-token int8) wherever that keeps the model's predictions on those texts:
it starts from every Dense with int8 activations and returns layers to float
activations, most outlier-prone first, until argmax agreement with the float
model on the calibration texts is at least `CALIBRATION_AGREEMENT` (cosine
at least `CALIBRATION_COSINE` for embeddings), or every layer is
weight-only again.

Example (on a model of its own: quantizing changes the backbone in place):
>>> small = kbert.BertBackbone(
...     vocabulary_size=41, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)
>>> classifier = kbert.BertClassifier(small, num_classes=2)
>>> classifier.quantize("int8")
>>> classifier.backbone.get_layer("transformer_layer_0").query.quantization_mode
'int8'
>>> classifier.predict(token_inputs, verbose=0).shape
(3, 2)
"""

import contextlib
import gc
import re

import keras
import numpy as np

from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.models.int8_activations import use_float_matmuls
from kbert.models.lora import dense_sublayers

MODES = ("int8", "int4")
REFUSED_MODES = {
    "float8": (
        "Keras' float8 keeps delayed-scaling statistics that only training steps "
        "calibrate; quantizing a trained model leaves every scale at 1 and its "
        "outputs wrong. Use 'int8' (or 'int4')."
    ),
    "gptq": "GPTQ needs a layer structure and a calibration dataset kbert does not "
    "build. Use 'int8' (or 'int4').",
    "awq": "AWQ needs a layer structure and a calibration dataset kbert does not "
    "build. Use 'int8' (or 'int4').",
}
CALIBRATION_AGREEMENT = 0.99
CALIBRATION_COSINE = 0.999
# Calibration returns layers to float activations in this order: the FFN
# output reads GELU outputs (the widest range), the attention output reads
# attention context, the rest read LayerNorm outputs.
_OUTLIER_ORDER = ("output", "attention_output", "intermediate", "query", "key", "value")


def weight_only_config(mode):
    """Keras' config for `mode` with float activations.

    Example:
    >>> weight_only_config("int8").activation_quantizer is None
    True
    """
    if mode == "int8":
        return keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
    return keras.quantizers.Int4QuantizationConfig(activation_quantizer=None)


def check_mode(mode, config):
    """The mode to quantize with, or a `ValueError` naming why not."""
    mode = mode if mode is not None else getattr(config, "mode", None)
    if mode in REFUSED_MODES:
        raise ValueError(f"kbert refuses quantize({mode!r}): {REFUSED_MODES[mode]}")
    if mode not in MODES:
        raise ValueError(f"quantize(mode) must be one of {list(MODES)}; got {mode!r}.")
    if config is not None and getattr(config, "mode", mode) != mode:
        raise ValueError(f"quantize({mode!r}) got a config for mode {config.mode!r}.")
    return mode


def quantizable_layers(model):
    """The layers kbert's rule quantizes in `model` (a backbone or a task).

    Example:
    >>> sorted({layer.name for layer in quantizable_layers(backbone)})[:4]
    ['attention_output', 'intermediate', 'key', 'output']
    """
    backbone = getattr(model, "backbone", model)
    tied = {
        id(layer.token_embedding)
        for layer in model._flatten_layers()
        if isinstance(layer, MaskedLMHead)
    }
    embeddings = backbone.embeddings
    layers = [
        layer
        for layer in (embeddings.token_embedding, embeddings.segment_embedding)
        if id(layer) not in tied
    ]
    return layers + dense_sublayers(backbone)


class QuantizableModel:
    """`quantize` for kbert's backbone and task models (see the module)."""

    def quantize(
        self, mode=None, config=None, filters=None, calibration_texts=None, **kwargs
    ):
        """Keras' `Model.quantize` under kbert's rule (see `kbert.models.quantization`).

        `config` (a `keras.quantizers.QuantizationConfig`) replaces the
        weight-only default; `filters` narrows the layers further;
        `calibration_texts` quantizes activations where they keep the
        predictions on those texts (a model with a preprocessor only).
        """
        mode = check_mode(mode, config)
        if _is_keras_default(config):  # Keras' wrapper fills in its default config
            config = None
        if any(layer.quantization_mode for layer in quantizable_layers(self)):
            raise ValueError(f"{self.name} is already quantized; quantize a float model.")
        if calibration_texts is not None and config is not None:
            raise ValueError("Pass `config` or `calibration_texts`, not both.")
        chosen = {id(layer) for layer in quantizable_layers(self)}
        user_filter = _filter(filters)

        def selected(layer):
            return id(layer) in chosen and user_filter(layer)

        reference = None
        if calibration_texts is not None:
            if getattr(self, "preprocessor", None) is None:
                raise ValueError(
                    "quantize(calibration_texts=...) needs a model with a preprocessor "
                    "(raw texts in)."
                )
            calibration_texts = list(calibration_texts)
            reference = self.predict(calibration_texts, verbose=0)
            config = (
                keras.quantizers.Int8QuantizationConfig()
                if mode == "int8"
                else keras.quantizers.Int4QuantizationConfig(
                    activation_quantizer=keras.quantizers.AbsMaxQuantizer()
                )
            )
        with _one_garbage_collection():
            super().quantize(
                mode, config=config or weight_only_config(mode), filters=selected, **kwargs
            )
        for layer in quantizable_layers(self):
            use_float_matmuls(layer)
        if reference is not None:
            _calibrate(self, mode, calibration_texts, reference)
        self.__dict__.pop("_kbert_inference", None)  # compiled with the float weights

    def quantized_layer_paths(self):
        """{layer path: True if its activations are quantized too} of quantized layers."""
        return {
            layer.path: getattr(layer, "inputs_quantizer", None) is not None
            for layer in quantizable_layers(self)
            if layer.quantization_mode is not None
        }


@contextlib.contextmanager
def _one_garbage_collection():
    """One `gc.collect()` at the end instead of one per replaced weight.

    Keras' `Layer.__delattr__` runs a full collection each time quantizing
    drops a float kernel: 39 for all-MiniLM-L6-v2, 0.4 s each in a process
    that has loaded TensorFlow (15 of quantize's 17 s), longer the more
    objects the process holds.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
        collect()


def _is_keras_default(config):
    """Whether `config` is what Keras makes of `quantize(mode)` without one."""
    if config is None:
        return True
    activations = config.activation_quantizer
    default_activations = activations is None or (
        isinstance(activations, keras.quantizers.AbsMaxQuantizer)
        and activations.get_config() == keras.quantizers.AbsMaxQuantizer().get_config()
    )
    block_size = getattr(config, "block_size", 128)
    return config.weight_quantizer is None and default_activations and block_size == 128


def _filter(filters):
    if filters is None:
        return lambda layer: True
    if callable(filters):
        return filters
    patterns = [filters] if isinstance(filters, str) else list(filters)
    return lambda layer: any(re.search(p, layer.path) for p in patterns)


def agreement(reference, outputs):
    """Argmax agreement of logits, or the mean cosine of embeddings (1-D rows).

    Example:
    >>> agreement(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[2.0, 1.0], [1.0, 0.0]]))
    ('argmax agreement', 0.5)
    """
    reference, outputs = np.asarray(reference), np.asarray(outputs)
    if reference.ndim == 2 and reference.shape[-1] > 16:  # embeddings or features
        dot = np.sum(reference * outputs, axis=-1)
        norms = np.linalg.norm(reference, axis=-1) * np.linalg.norm(outputs, axis=-1)
        return "mean cosine", float(np.mean(dot / np.maximum(norms, 1e-12)))
    same = np.argmax(reference, axis=-1) == np.argmax(outputs, axis=-1)
    return "argmax agreement", float(np.mean(same))


def _holds(name, value):
    bound = CALIBRATION_COSINE if name == "mean cosine" else CALIBRATION_AGREEMENT
    return value >= bound


def _calibrate(model, mode, texts, reference):
    """Returns Dense layers to float activations, one sublayer name (in every
    transformer layer) at a time, until the bound holds."""
    dense = [
        layer
        for layer in quantizable_layers(model)
        if isinstance(layer, keras.layers.Dense) and layer.quantization_mode == mode
    ]
    names = [name for name in _OUTLIER_ORDER if any(d.name == name for d in dense)]
    names += sorted({d.name for d in dense} - set(names))
    for name in [None, *names]:
        for layer in dense:
            if layer.name == name:
                layer.inputs_quantizer = None
                layer.quantization_config = weight_only_config(mode)
        model.__dict__.pop("_kbert_inference", None)
        if _holds(*agreement(reference, model.predict(texts, verbose=0))):
            return


def restore_activation_quantizers(backbone, quantized_activations):
    """After loading: float activations in every quantized Dense except those
    named in `quantized_activations` (Keras rebuilds them with its default,
    quantized activations)."""
    for layer in quantizable_layers(backbone):
        if layer.quantization_mode is None or not isinstance(layer, keras.layers.Dense):
            continue
        if layer.path not in quantized_activations:
            layer.inputs_quantizer = None
            layer.quantization_config = weight_only_config(layer.quantization_mode)
        use_float_matmuls(layer)
