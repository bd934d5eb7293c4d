"""The shared harnesses of the tests: one for layers, one for preprocessing
layers, one for models.

- `run_layer_test`: eager and symbolic calls agree on shapes, a training
  call, the config round trip, a `.keras` round trip with identical outputs,
  and dtype policies (finite outputs in the compute dtype, float32 variables).
- `run_preprocessing_layer_test`: the expected outputs, the config round
  trip, `.keras` and preset round trips (the vocabulary is an asset), the
  same outputs inside `tf.data`, int32 outputs under a mixed dtype policy.
- `run_model_test`: an eager call, a variable sequence length, the config
  round trip, `.keras` and preset round trips with identical outputs, one
  `fit` step (its loss the model's loss on these outputs and labels),
  `predict` on a `tf.data.Dataset`, and mixed precision.
"""

import contextlib
import os

import keras
import numpy as np

MIXED_POLICIES = ("mixed_bfloat16", "mixed_float16")

TINY_BACKBONE = dict(
    vocabulary_size=64,
    num_layers=2,
    num_heads=2,
    hidden_dim=16,
    intermediate_dim=32,
    max_sequence_length=24,
)


def tiny_backbone(**overrides):
    import kbert

    return kbert.BertBackbone(**{**TINY_BACKBONE, **overrides})


def randomized(model, seed=0, scale=0.2):
    """Every variable random (LayerNorm scales around 1), so no mix-up of
    weights hides behind zeros and ones."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        value = rng.normal(0.0, scale, variable.shape)
        if variable.path.endswith("gamma"):
            value += 1.0
        variable.assign(value.astype("float32"))
    return model


def token_inputs(batch=3, length=10, extra_dims=(), seed=0, vocabulary_size=64):
    """Random token ids with [CLS]-like first token and right padding."""
    rng = np.random.default_rng(seed)
    shape = (batch,) + tuple(extra_dims) + (length,)
    token_ids = rng.integers(4, vocabulary_size, shape).astype("int32")
    lengths = rng.integers(2, length + 1, shape[:-1])
    lengths.reshape(-1)[0] = length  # one full row
    padding_mask = (np.arange(length) < lengths[..., None]).astype("int32")
    segment_ids = ((np.arange(length) >= lengths[..., None] // 2) * padding_mask).astype(
        "int32"
    )
    return {
        "token_ids": token_ids * padding_mask,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def to_numpy(outputs):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def ragged_lists(ids):
    """The tokenizer's ragged ids as nested lists: a `tf.RaggedTensor` on the
    TensorFlow backend, lists already on the others."""
    if hasattr(ids, "to_list"):
        return ids.to_list()
    assert keras.config.backend() != "tensorflow", type(ids)
    return ids


def shapes(outputs):
    return keras.tree.map_structure(lambda x: tuple(x.shape), outputs)


def assert_all_close(actual, expected, atol=1e-6):
    keras.tree.assert_same_structure(actual, expected)
    for a, e in zip(
        keras.tree.flatten(to_numpy(actual)), keras.tree.flatten(to_numpy(expected))
    ):
        np.testing.assert_allclose(a, e, atol=atol, rtol=0)


@keras.saving.register_keras_serializable(package="kbert_tests")
class LayerHolder(keras.Model):
    """A model around one layer, so that the layer alone goes through `.keras`."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.built = True  # holds no weights of its own

    def call(self, *args, **kwargs):
        return self.layer(*args, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["layer"] = keras.saving.serialize_keras_object(self.layer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = keras.saving.deserialize_keras_object(config["layer"])
        return cls(**config)


def keras_round_trip(layer, tmp_path):
    """The layer after a `.keras` save and load (weights and assets included)."""
    path = os.path.join(tmp_path, f"{type(layer).__name__}.keras")
    LayerHolder(layer).save(path)
    return keras.saving.load_model(path).layer


def _symbolic(value):
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "shape"):
        return keras.KerasTensor(
            tuple(value.shape), dtype=keras.backend.standardize_dtype(value.dtype)
        )
    return value


def run_layer_test(
    cls,
    init_kwargs,
    inputs,
    expected_output_shape,
    call_kwargs=None,
    non_config_kwargs=None,
    float32_outputs=False,
    tmp_path=None,
):
    """Runs the standard checks on `cls(**init_kwargs)` called on `inputs`.

    Args:
        inputs: the positional call arguments (a tuple).
        call_kwargs: keyword call arguments (arrays become symbolic too).
        non_config_kwargs: `dtype -> dict` of constructor arguments that are
            not config (another layer's weights); such a layer is revived
            with `from_config` and `set_weights` instead of `.keras`.
        float32_outputs: the layer outputs float32 under mixed precision.
    """
    call_kwargs = call_kwargs or {}
    extra = non_config_kwargs or (lambda dtype: {})
    layer = cls(**init_kwargs, **extra(None))

    # Eager and symbolic calls give the expected shapes.
    outputs = layer(*inputs, **call_kwargs)
    assert shapes(outputs) == expected_output_shape, (
        shapes(outputs),
        expected_output_shape,
    )
    symbolic = layer(
        *[_symbolic(x) for x in inputs],
        **{k: _symbolic(v) for k, v in call_kwargs.items()},
    )
    assert shapes(symbolic) == expected_output_shape

    # A training call (dropout on) runs and stays finite.
    for value in keras.tree.flatten(to_numpy(layer(*inputs, training=True, **call_kwargs))):
        assert np.isfinite(value).all()

    # Config round trip.
    config = layer.get_config()
    revived = cls.from_config({**config, **extra(None)})
    assert revived.get_config() == config

    # Serialization: identical outputs after `.keras` (or set_weights).
    if non_config_kwargs is None:
        revived = keras_round_trip(layer, tmp_path)
    else:
        revived(*inputs, **call_kwargs)
        revived.set_weights(layer.get_weights())
    assert_all_close(revived(*inputs, **call_kwargs), outputs)

    # Dtype policies: float32 variables, finite outputs in the compute dtype.
    for policy in MIXED_POLICIES:
        mixed = cls(**init_kwargs, dtype=policy, **extra(policy))
        for value in keras.tree.flatten(mixed(*inputs, **call_kwargs)):
            expected = "float32" if float32_outputs else policy.split("_")[1]
            assert keras.backend.standardize_dtype(value.dtype) == expected, policy
            assert np.isfinite(keras.ops.convert_to_numpy(value).astype("float32")).all()
        assert {v.dtype for v in mixed.weights} <= {"float32"}, policy
    return layer


def run_preprocessing_layer_test(cls, init_kwargs, input_data, expected_output, tmp_path):
    """Runs the standard checks on a string layer `cls(**init_kwargs)`.

    `input_data` is a list of strings (or a tuple of two, for pairs);
    `expected_output` what the layer returns for it, compared exactly.
    """
    import tensorflow as tf

    layer = cls(**init_kwargs)

    def check(output, context):
        assert to_lists(output) == to_lists(expected_output), context

    check(layer(input_data), "eager call")

    # Config round trip: the vocabulary is an asset, never config.
    config = layer.get_config()
    assert cls.from_config(config).get_config() == config

    # `.keras` and preset round trips give the same outputs.
    check(keras_round_trip(layer, tmp_path)(input_data), ".keras round trip")
    preset = os.path.join(tmp_path, f"{cls.__name__}_preset")
    layer.save_to_preset(preset)
    check(cls.from_preset(preset)(input_data), "preset round trip")

    # Inside `tf.data`, on every backend.
    rows = len(input_data[0] if isinstance(input_data, tuple) else input_data)
    dataset = tf.data.Dataset.from_tensor_slices(input_data).batch(rows)
    # A dataset of pairs hands the two segments over as two arguments.
    mapped = dataset.map(lambda *parts: layer(parts if len(parts) > 1 else parts[0]))
    check(next(iter(mapped)), "tf.data")

    # A mixed dtype policy leaves ids int32.
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        mixed = cls(**init_kwargs)(input_data)
    finally:
        keras.config.set_dtype_policy("float32")
    for value in keras.tree.flatten(mixed):
        if hasattr(value, "dtype"):
            assert keras.backend.standardize_dtype(value.dtype) == "int32"
    return layer


def to_lists(value):
    """Nested Python lists of ints from any backend's or TF's (ragged) tensors."""
    if isinstance(value, dict):
        return {key: to_lists(item) for key, item in value.items()}
    if hasattr(value, "to_list"):  # tf.RaggedTensor
        return value.to_list()
    if isinstance(value, (list, tuple)):
        return [to_lists(item) for item in value]
    if hasattr(value, "numpy"):  # TF and torch tensors
        return value.numpy().tolist()
    return np.asarray(value).tolist()


def _shorten(input_data, length):
    return {
        name: value if name == "mask_positions" else value[..., :length]
        for name, value in input_data.items()
    }


MIXED_PRECISION_BOUNDS = {"mixed_bfloat16": 0.03, "mixed_float16": 0.005}


@contextlib.contextmanager
def tensorflow_functions_eagerly(eagerly):
    """On TensorFlow, `tf.function`s run eagerly (True) or are traced (False,
    the path users take) inside this block; a no-op on the other backends.
    Tests marked `eager_on_tensorflow` run inside `(True)`, `run_model_test`
    inside `(False)`."""
    if keras.backend.backend() != "tensorflow":
        yield
        return
    import tensorflow as tf

    before = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(eagerly)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(before)


@tensorflow_functions_eagerly(False)  # traced as users run it, on every backend
def run_model_test(
    cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    y=None,
    sample_weight=None,
    tmp_path=None,
    run_fit=True,
    run_mixed_precision=True,
):
    """Runs the standard checks on `cls(**init_kwargs())`.

    `init_kwargs` is a function returning fresh arguments (a backbone cannot
    be shared between models under different dtype policies).
    """
    import tensorflow as tf

    model = cls(**init_kwargs())

    # Eager call and output structure.
    outputs = model(input_data)
    assert shapes(outputs) == expected_output_shape, (
        shapes(outputs),
        expected_output_shape,
    )

    # Variable sequence length: a shorter batch runs through the same model.
    full = input_data["token_ids"].shape[-1]
    length = full - 3
    short = model(_shorten(input_data, length))
    expected_short = [
        tuple(length if d == full else d for d in x.shape)
        for x in keras.tree.flatten(outputs)
    ]
    assert [tuple(x.shape) for x in keras.tree.flatten(short)] == expected_short

    # Config round trip.
    config = model.get_config()
    revived = cls.from_config(config)
    assert revived.get_config() == config

    # Inference outputs survive `.keras` and preset round trips exactly.
    expected = to_numpy(model(input_data))
    float_weights = model.get_weights()
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    assert_all_close(keras.saving.load_model(path)(input_data), expected)
    preset = os.path.join(tmp_path, "preset")
    model.save_to_preset(preset)
    assert_all_close(cls.from_preset(preset)(input_data), expected)

    # `predict` on a tf.data pipeline, on every backend.
    dataset = tf.data.Dataset.from_tensor_slices(input_data).batch(2)
    assert_all_close(model.predict(dataset, verbose=0), expected, atol=1e-5)

    if run_fit:
        # One step on one batch: its loss is the loss of the outputs before
        # the step (with dropout off, those of a plain call), computed here
        # by the model's own compiled loss, with the same labels and weights;
        # and the step moves the weights.
        for layer in model._flatten_layers():
            if isinstance(layer, keras.layers.Dropout):
                layer.rate = 0.0
        tensors = [
            None if v is None else keras.tree.map_structure(keras.ops.convert_to_tensor, v)
            for v in (y, sample_weight)
        ]
        want = model.compute_loss(
            x=input_data, y=tensors[0], y_pred=model(input_data), sample_weight=tensors[1]
        )
        history = model.fit(
            input_data,
            y,
            sample_weight=sample_weight,
            batch_size=len(y_first(y)),
            verbose=0,
        )
        np.testing.assert_allclose(
            history.history["loss"][0], keras.ops.convert_to_numpy(want), rtol=1e-5
        )
        moved = [
            not np.array_equal(a, b) for a, b in zip(model.get_weights(), float_weights)
        ]
        assert any(moved)

    if run_mixed_precision:
        for policy in ("mixed_bfloat16", "mixed_float16"):
            kwargs = init_kwargs()
            if "backbone" in kwargs:
                kwargs["backbone"] = type(kwargs["backbone"]).from_config(
                    {**kwargs["backbone"].get_config(), "dtype": policy}
                )
            else:
                kwargs["dtype"] = policy
            mixed = cls(**kwargs)
            assert {v.dtype for v in mixed.weights} == {"float32"}, policy
            mixed.set_weights(float_weights)
            # Largest error relative to each output's range: bfloat16 keeps 8
            # bits of mantissa, float16 11.
            bound = MIXED_PRECISION_BOUNDS[policy]
            actual = keras.tree.flatten(to_numpy(mixed(input_data)))
            for value, reference in zip(actual, keras.tree.flatten(expected)):
                value = value.astype("float32")
                error = np.max(np.abs(value - reference)) / np.max(np.abs(reference))
                assert error <= bound, (policy, error)
    return model


def y_first(y):
    return keras.tree.flatten(y)[0]
