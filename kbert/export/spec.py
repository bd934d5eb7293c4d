"""What a kbert model exports: its inputs, its named outputs and its text side.

Every exporter (SavedModel, TFLite, ONNX) reads the same `ExportSpec`, so a
classifier answers `logits` and `probabilities` on every runtime, and a
question answerer `start_logits` and `end_logits`.

The string signatures of the SavedModel and the string-in TFLite flavour call
`text_features` on their `tf.string` inputs: the model's `BertPreprocessor`
runs in the graph, so clients send raw text.
"""

import dataclasses
import hashlib
import weakref

import keras
import numpy as np

from kbert.models.backbone import INPUT_NAMES

# The backbone's token inputs, in order (one home: `kbert.models.backbone`).
TOKEN_INPUTS = INPUT_NAMES


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """The exported interface of one model.

    Attributes:
        task: the model's task name (`kbert.models.MODEL_CLASSES`).
        token_inputs: names of the token-id inputs, in order.
        extra_dims: dimensions between batch and sequence (`(num_choices,)`
            for multiple choice).
        text_inputs: names of the string inputs of the text signatures.
        output_names: names of the outputs, in order.
        labels: class names of a classifier (`id2label`, else `label_{i}`).
        sequence_outputs, position_outputs, agreement, mediapipe_task,
            mediapipe_outputs: the model class's declarations of the same
            names (`kbert.models.preset_io.PresetMixin`).
    """

    task: str
    token_inputs: tuple
    extra_dims: tuple
    text_inputs: tuple
    output_names: tuple
    labels: tuple = ()
    sequence_outputs: tuple = ()
    position_outputs: tuple = ()
    agreement: str | None = None
    mediapipe_task: str | None = None
    mediapipe_outputs: tuple = ()  # (output name, MediaPipe's name) pairs

    @property
    def is_pair(self):
        return len(self.text_inputs) == 2

    @property
    def per_token_outputs(self):
        """The outputs index word pieces: string signatures also return the
        `token_ids` they ran on."""
        return bool(self.sequence_outputs or self.position_outputs)


def export_spec(model, text_pairs=None):
    """The `ExportSpec` of a kbert model, read from its declarations and graph.

    The token inputs and the dimensions between batch and sequence are the
    model's inputs; the text inputs and output names are what its class
    declares (`text_inputs`, `pair_text_inputs`, `export_outputs`).
    `text_pairs=True` makes the string signature of a classifier take
    `(text, text_pair)`.

    Example:
    >>> export_spec(kbert.BertClassifier(backbone, num_classes=2)).output_names
    ('logits', 'probabilities')
    """
    output_names = tuple(model.export_outputs(model.output))  # raises if not exportable
    quantized = sorted(getattr(model, "quantized_layer_paths", dict)())
    if quantized:
        raise ValueError(
            f"Cannot export {model.name}: it is Keras-quantized ({len(quantized)} layers, "
            f"e.g. {quantized[0]!r}), and kbert verifies exports of float models only. "
            "Export the float model and let the exporter quantize for its runtime: "
            "onnx(..., quantization='dynamic_int8'), "
            "tflite(..., quantization='dynamic_int8'), openvino(..., quantization='int8')."
        )
    text_inputs = model.text_inputs
    if text_pairs:
        if model.pair_text_inputs is None:
            raise ValueError(
                f"text_pairs=True is for classifiers, not a {model.task_name}."
            )
        text_inputs = model.pair_text_inputs
    labels = ()
    if "num_classes" in model.get_config():
        id2label = getattr(model, "id2label", None) or {}
        labels = tuple(str(id2label.get(i, f"label_{i}")) for i in range(model.num_classes))
    return ExportSpec(
        task=model.task_name,
        token_inputs=tuple(model.input),
        extra_dims=tuple(model.input["token_ids"].shape[1:-1]),
        text_inputs=tuple(text_inputs),
        output_names=output_names,
        labels=labels,
        sequence_outputs=tuple(model.sequence_outputs),
        position_outputs=tuple(model.position_outputs),
        agreement=model.agreement,
        mediapipe_task=model.mediapipe_task,
        mediapipe_outputs=tuple((model.mediapipe_outputs or {}).items()),
    )


def forward(model, inputs):
    """Named outputs (`export_outputs`) of `model` for token inputs, in inference mode.

    Example:
    >>> sorted(forward(classifier, token_inputs))
    ['logits', 'probabilities']
    """
    return model.export_outputs(model(dict(inputs), training=False))


def keras_outputs(model, inputs):
    """`forward` on NumPy inputs, as NumPy float32 arrays.

    Example:
    >>> keras_outputs(classifier, token_inputs)["probabilities"].shape
    (3, 2)
    """
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    if keras.backend.backend() == "jax":
        values = [
            [v.value for v in variables]
            for variables in (model.trainable_variables, model.non_trainable_variables)
        ]
        outputs = _jax_forward(model)(*values, inputs)
    else:
        outputs = forward(model, inputs)
    return {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in outputs.items()}


_JAX_FORWARDS = weakref.WeakKeyDictionary()


def stateless_forward(model):
    """`forward` as a pure function `(trainable, non_trainable, inputs) ->
    outputs` of the model's variable values (JAX: for `jax.jit` and
    jax2onnx)."""

    def function(trainable, non_trainable, inputs):
        outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=False)
        return model.export_outputs(outputs)

    return function


def _jax_forward(model):
    """`forward` as one jitted function of the model's variables: eager JAX
    compiles every op of every call on its own (141 compilations, 19 s, for
    one tiny model's verification); this compiles once per input shape."""
    if model not in _JAX_FORWARDS:
        import jax  # lazy: the JAX backend only

        _JAX_FORWARDS[model] = jax.jit(stateless_forward(model))
    return _JAX_FORWARDS[model]


def weights_fingerprint(model):
    """A hash of the model's weights (names, shapes, values): equal for an
    unchanged model, different once training or loading changed one weight.

    Example:
    >>> before = weights_fingerprint(classifier)
    >>> before == weights_fingerprint(classifier)
    True
    """
    digest = hashlib.blake2b(digest_size=16)
    for variable in model.weights:
        value = np.ascontiguousarray(keras.ops.convert_to_numpy(variable.value))
        digest.update(f"{variable.path}:{value.dtype}:{value.shape}".encode())
        digest.update(value.data)
    return digest.hexdigest()


def check_one_text_per_row(model, spec, mask_reason, pairs_reason=""):
    """Raises `ValueError` for a model a string-in graph of one text per row
    cannot serve (ONNX's and OpenVINO's `flavour="string"`): no preprocessor,
    `[MASK]` positions beside the text (`mask_reason` says why not), or more
    than one text per row (`pairs_reason`, appended, says why not).

    Example:
    >>> check_one_text_per_row(classifier, spec, "it takes mask positions")
    """
    if model.preprocessor is None:
        raise ValueError(
            'flavour="string" needs the model\'s preprocessor (its vocabulary and '
            'sequence length); attach one or use flavour="token_ids".'
        )
    if "mask_positions" in spec.token_inputs:
        raise ValueError(
            f'flavour="string" does not support a {spec.task}: {mask_reason}; '
            'use flavour="token_ids".'
        )
    if spec.extra_dims or len(spec.text_inputs) != 1:
        raise ValueError(
            f'flavour="string" takes one text per row; a {spec.task} takes '
            f'{", ".join(spec.text_inputs)}{pairs_reason}: use flavour="token_ids".'
        )


def token_input_shape(spec, batch_size=None, sequence_length=None, name="token_ids"):
    """Shape of one token input: (batch, *extra_dims, seq), or (batch, P) masks.

    Example:
    >>> token_input_shape(spec, sequence_length=128)  # dynamic batch
    (None, 128)
    """
    if name == "mask_positions":
        return (batch_size, None)
    return (batch_size,) + tuple(spec.extra_dims) + (sequence_length,)


# Strings to model inputs inside an exported TensorFlow graph.


def text_features(preprocessor, spec, texts):
    """Token inputs (and extra outputs) for a dict of `tf.string` tensors.

    Args:
        preprocessor: a `BertPreprocessor`.
        spec: the model's `ExportSpec`; `texts` holds `spec.text_inputs`.
        texts: 1-D string tensors (`choices` is 2-D: batch x num_choices).

    Returns:
        `(features, extras)`: the token inputs of the model, and outputs the
        string signature adds for the client (`token_ids` for token-level
        tasks, `mask_positions` for masked LM).

    Example:
    >>> texts = {"text": tf.constant(["A fine film."])}
    >>> features, extras = text_features(preprocessor, spec, texts)
    >>> sorted(features), features["token_ids"].shape, extras
    (['padding_mask', 'segment_ids', 'token_ids'], TensorShape([1, 16]), {})
    """
    import tensorflow as tf  # lazy: TF only in exported string graphs

    extras = {}
    if spec.extra_dims:  # multiple choice: each prompt paired with its choices
        prompt, choices = (texts[name] for name in spec.text_inputs)
        num_choices = spec.extra_dims[0]
        flat = preprocessor.preprocess(
            (tf.repeat(prompt, num_choices), tf.reshape(choices, [-1]))
        )
        features = {
            name: tf.reshape(value, [-1, num_choices, preprocessor.sequence_length])
            for name, value in _checked(flat).items()
        }
        return features, extras
    segments = tuple(texts[name] for name in spec.text_inputs)
    packed = preprocessor.preprocess(segments if len(segments) == 2 else segments[0])
    features = _checked(packed)
    if spec.per_token_outputs:
        extras["token_ids"] = features["token_ids"]
    if "mask_positions" in spec.token_inputs:
        positions = mask_positions(
            features["token_ids"], preprocessor.tokenizer.mask_token_id
        )
        features["mask_positions"] = tf.maximum(positions, 0)
        extras["mask_positions"] = positions
    return features, extras


def _checked(packed):
    import tensorflow as tf  # lazy: TF only in exported string graphs

    features = {name: packed[name] for name in TOKEN_INPUTS}
    # The same values (the packer gives padding segment 0), but the product
    # stops TFLite's converter from folding `segment_ids < 0` (inside the
    # segment embedding) into a boolean ZerosLike that TFLite cannot run.
    features["segment_ids"] = features["segment_ids"] * features["padding_mask"]
    return {name: tf.cast(value, tf.int32) for name, value in features.items()}


def mask_positions(token_ids, mask_token_id):
    """(batch, P) positions of `[MASK]` tokens, P the most in a row; -1 pads.

    Example:
    >>> token_ids = tf.constant([[2, 4, 9, 4, 3], [2, 9, 4, 3, 0]])
    >>> mask_positions(token_ids, mask_token_id=4).numpy()
    array([[ 1,  3],
           [ 2, -1]], dtype=int32)
    """
    import tensorflow as tf  # lazy: TF only in exported string graphs

    if mask_token_id is None:
        raise ValueError("A masked LM string signature needs [MASK] in the vocabulary.")
    is_mask = tf.cast(tf.equal(token_ids, mask_token_id), tf.int32)
    count = tf.reduce_sum(is_mask, axis=1)
    width = tf.maximum(tf.reduce_max(count), 1)
    order = tf.argsort(-is_mask, axis=1, stable=True)[:, :width]
    valid = tf.range(width)[None, :] < count[:, None]
    return tf.where(valid, tf.cast(order, tf.int32), -1)
