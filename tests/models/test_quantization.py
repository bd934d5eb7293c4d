"""Keras' `model.quantize` on kbert models, compared with the float model.

Tiny models check the rule (which layers, the quantized call path, saving,
training) on every task; the demo recipe's trained classifier and
all-MiniLM-L6-v2 check that int8 keeps real predictions and embeddings.
"""

import keras
import numpy as np
import pytest

import kbert
from kbert.models.int8_activations import FloatCarriedQuantizer, use_float_matmuls
from kbert.models.quantization import agreement, quantizable_layers
from tests.models.test_tasks import CASES
from tests.test_case import randomized, tiny_backbone, to_numpy, token_inputs
from tests.trained_models import demo_classifier_preset


def _tiny_task(case):
    cls, kwargs, extra_inputs, _, _ = CASES[case]
    model = randomized(cls(tiny_backbone(), **kwargs), scale=0.1)
    return model, {**token_inputs(), **extra_inputs}


def _max_relative_error(actual, expected):
    actual, expected = keras.tree.flatten(actual), keras.tree.flatten(expected)
    return max(
        float(np.max(np.abs(a - e)) / np.max(np.abs(e))) for a, e in zip(actual, expected)
    )


@pytest.mark.eager_on_tensorflow  # tiny models; the real-weight tests below trace
@pytest.mark.parametrize("mode,bound", [("int8", 0.03), ("int4", 0.3)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_quantized_task_stays_close_to_float(case, mode, bound):
    model, inputs = _tiny_task(case)
    expected = to_numpy(model.predict(inputs, verbose=0))
    model.quantize(mode)
    actual = to_numpy(model.predict(inputs, verbose=0))
    # The float kernel read as raw integers (the `call()` path) is off by
    # orders of magnitude, not by the rounding these bounds allow.
    assert _max_relative_error(actual, expected) < bound
    layers = quantizable_layers(model)
    assert {layer.quantization_mode for layer in layers} == {mode}
    assert not any(model.quantized_layer_paths().values())  # weight-only
    backbone = model.backbone
    assert backbone.embeddings.position_embedding.quantization_mode is None
    assert backbone.embeddings.layer_norm.quantization_mode is None
    tied = case in ("masked_lm", "pretrainer")
    assert (backbone.token_embedding.quantization_mode is None) == tied
    heads = [w for w in model.weights if not any(w is v for v in backbone.weights)]
    assert all(w.dtype == "float32" for w in heads)


@pytest.mark.eager_on_tensorflow  # tiny models; the real-weight tests below trace
def test_quantized_model_round_trips_through_keras_and_presets(tmp_path):
    model, inputs = _tiny_task("classifier_single_label")
    model.quantize("int8")
    expected = to_numpy(model.predict(inputs, verbose=0))
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(to_numpy(reloaded.predict(inputs, verbose=0)), expected)
    model.save_to_preset(tmp_path / "preset")
    loaded = kbert.BertClassifier.from_preset(tmp_path / "preset")
    np.testing.assert_array_equal(to_numpy(loaded.predict(inputs, verbose=0)), expected)
    assert loaded.quantized_layer_paths() == model.quantized_layer_paths()


@pytest.mark.eager_on_tensorflow  # tiny models; the real-weight tests below trace
def test_quantized_model_fine_tunes_further():
    model, inputs = _tiny_task("classifier_single_label")
    model.quantize("int8")
    labels = np.array([0, 2, 1])
    before = model.evaluate(inputs, labels, verbose=0, return_dict=True)["loss"]
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(inputs, labels, epochs=8, batch_size=3, verbose=0)
    after = model.evaluate(inputs, labels, verbose=0, return_dict=True)["loss"]
    assert after < 0.9 * before
    assert model.backbone.get_layer("transformer_layer_0").query.kernel.dtype == "int8"


@pytest.mark.eager_on_tensorflow  # tiny models; the real-weight tests below trace
def test_int8_activations_run_float_matmuls_with_keras_outputs(tmp_path):
    """On TensorFlow and PyTorch the int8 x int8 matmul runs in float32
    (`kbert.models.int8_activations`), with Keras' int32 outputs bit for bit,
    also after loading (which rebuilds Keras' default quantizer); JAX keeps
    Keras' quantizer."""
    model, inputs = _tiny_task("classifier_single_label")
    # Keras' default quantizer but for its epsilon: a config kbert does not
    # take for "weight-only, the default" (`_is_keras_default`).
    activations = keras.quantizers.AbsMaxQuantizer(epsilon=1e-6)
    config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=activations)
    model.quantize("int8", config=config)
    dense = [layer for layer in quantizable_layers(model) if layer.quantization_mode]
    dense = [layer for layer in dense if getattr(layer, "inputs_quantizer", None)]
    assert len(dense) == sum(model.quantized_layer_paths().values()) > 0
    carried = keras.backend.backend() in ("tensorflow", "torch")
    kind = FloatCarriedQuantizer if carried else keras.quantizers.AbsMaxQuantizer
    assert all(type(layer.inputs_quantizer) is kind for layer in dense)
    loaded_from = tmp_path / "preset"
    model.save_to_preset(loaded_from)
    loaded = kbert.BertClassifier.from_preset(loaded_from)
    assert loaded.quantized_layer_paths() == model.quantized_layer_paths()
    for task, epsilon in [(model, 1e-6), (loaded, keras.backend.epsilon())]:
        layers = [layer for layer in quantizable_layers(task) if layer.quantization_mode]
        layers = [layer for layer in layers if getattr(layer, "inputs_quantizer", None)]
        assert len(layers) == len(dense)
        assert all(type(layer.inputs_quantizer) is kind for layer in layers)
        float_matmuls = to_numpy(task.predict(inputs, verbose=0))
        for layer in layers:  # Keras' own int32 matmuls
            layer.inputs_quantizer = keras.quantizers.AbsMaxQuantizer(epsilon=epsilon)
        task.__dict__.pop("_kbert_inference", None)
        np.testing.assert_array_equal(
            to_numpy(task.predict(inputs, verbose=0)), float_matmuls
        )
    # At MiniLM's width (384 int8 products per output) too, on real-sized rows.
    layer = keras.layers.Dense(1536)
    layer.build((None, 384))
    layer.quantize("int8")
    x = np.random.default_rng(0).normal(size=(64, 384)).astype("float32") * 3.0
    keras_int32 = to_numpy(layer(x))
    use_float_matmuls(layer)
    assert (type(layer.inputs_quantizer) is FloatCarriedQuantizer) == carried
    np.testing.assert_array_equal(to_numpy(layer(x)), keras_int32)


@pytest.mark.parametrize(
    "mode,message",
    [("float8", "delayed-scaling"), ("int2", "one of"), ("awq", "AWQ")],
)
def test_unsafe_modes_are_refused_by_name(mode, message):
    model, _ = _tiny_task("classifier_single_label")
    config = None
    if mode == "awq":
        config = keras.quantizers.AWQConfig(dataset=["a"], tokenizer=lambda x: x)
    with pytest.raises(ValueError, match=message):
        model.quantize(mode, config=config)
    assert not model.quantized_layer_paths()


def test_quantizing_twice_and_exporting_are_refused(tmp_path):
    model, _ = _tiny_task("classifier_single_label")
    model.quantize("int8")
    with pytest.raises(ValueError, match="already quantized"):
        model.quantize("int8")
    with pytest.raises(ValueError, match="Keras-quantized.*dynamic_int8"):
        kbert.export.onnx(model, tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


# === Real weights ===


@pytest.fixture(scope="module")
def demo_reviews():
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE, sentiment_splits

    return sentiment_splits(seed=DEMO_RECIPE.seed)["test"][0][:512]  # held-out reviews


@pytest.fixture(scope="module")
def demo_float_logits(demo_reviews):
    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    return model.predict(demo_reviews, batch_size=64, verbose=0)


def test_int8_keeps_the_demo_classifiers_predictions(demo_reviews, demo_float_logits):
    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    model.quantize("int8")
    actual = model.predict(demo_reviews, batch_size=64, verbose=0)
    name, value = agreement(demo_float_logits, actual)
    print(
        f"\n[{keras.backend.backend()}] int8 demo classifier, 512 reviews: {name} {value:.4f}"
    )
    assert name == "argmax agreement" and value >= 0.99, value


def test_calibration_quantizes_activations_only_where_predictions_hold(
    demo_reviews, demo_float_logits
):
    model = kbert.BertClassifier.from_preset(demo_classifier_preset())
    calibration, held_out = demo_reviews[:128], demo_reviews[128:512]
    model.quantize("int8", calibration_texts=calibration)
    assert len(model.quantized_layer_paths()) == 39
    on_calibration = model.predict(calibration, verbose=0)
    assert agreement(demo_float_logits[:128], on_calibration)[1] >= 0.99
    on_held_out = model.predict(held_out, verbose=0)
    assert agreement(demo_float_logits[128:512], on_held_out)[1] >= 0.98


def test_int8_embedder_keeps_minilm_embeddings(demo_reviews):
    model = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    expected = model.predict(demo_reviews, batch_size=64, verbose=0)
    model.quantize("int8")
    name, value = agreement(expected, model.predict(demo_reviews, batch_size=64, verbose=0))
    print(
        f"\n[{keras.backend.backend()}] int8 all-MiniLM-L6-v2, 512 reviews: {name} {value:.6f}"
    )
    assert name == "mean cosine" and value >= 0.999, value
