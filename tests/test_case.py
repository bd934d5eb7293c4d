"""The shared harness every model test calls.

`run_model_test` checks, for one model class and one set of arguments: an
eager call, a variable sequence length, the config round trip, `.keras` and
preset round trips with identical outputs, one `fit` step, `predict` on a
`tf.data.Dataset`, and mixed precision (finite outputs, float32 variables).
"""

import os

import keras
import numpy as np

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


def shapes(outputs):
    return keras.tree.map_structure(lambda x: tuple(x.shape), outputs)


def assert_all_close(actual, expected, atol=1e-6):
    keras.tree.assert_same_structure(actual, expected)
    for a, e in zip(
        keras.tree.flatten(to_numpy(actual)), keras.tree.flatten(to_numpy(expected))
    ):
        np.testing.assert_allclose(a, e, atol=atol, rtol=0)


def _shorten(input_data, length):
    return {
        name: value if name == "mask_positions" else value[..., :length]
        for name, value in input_data.items()
    }


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
        history = model.fit(
            input_data,
            y,
            sample_weight=sample_weight,
            batch_size=len(y_first(y)),
            verbose=0,
        )
        assert np.isfinite(history.history["loss"][0])

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
            for value in keras.tree.flatten(to_numpy(mixed(input_data))):
                assert np.isfinite(value.astype("float32")).all(), policy
            assert {v.dtype for v in mixed.weights} == {"float32"}, policy
    return model


def y_first(y):
    return keras.tree.flatten(y)[0]
