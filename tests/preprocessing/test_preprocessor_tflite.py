"""The tflite-mode preprocessor converts to TFLite and gives the same ids.

TensorFlow backend only: the conversion is TensorFlow's, whatever backend
the model around it uses.
"""

import keras
import numpy as np
import pytest

from kbert.data import vader_sentences
from kbert.preprocessing import BertPreprocessor, BertTokenizer
from tests.preprocessing.corpus import MINILM_VOCABULARY

pytestmark = pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="TFLite conversion is TensorFlow's: run once, on the TF backend",
)
UNCASED_VOCAB = MINILM_VOCABULARY


def convert(preprocessor):
    """Builtins + tf-text custom ops; one [batch, length, 3] output."""
    import tensorflow as tf

    spec = tf.TensorSpec([None], tf.string)

    @tf.function(input_signature=[spec, spec])
    def packed(first, second):
        out = preprocessor.preprocess((first, second))
        keys = ("token_ids", "segment_ids", "padding_mask")
        return tf.stack([out[key] for key in keys], axis=-1)

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [packed.get_concrete_function()], packed
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    return converter.convert()


def interpreter(model):
    """ai_edge_litert has no tf-text registrar: use TF's interpreter."""
    import tensorflow_text
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

    return InterpreterWithCustomOps(
        model_content=model,
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
    )


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_tflite_gives_the_keras_layer_ids(lowercase):
    texts, _ = vader_sentences(sources=("tweets",))
    first = np.array(texts[:300] + ["", "naïve Café [MASK] 日本語 😀", "x" * 150])
    second = np.array(texts[300:600] + ["only second", "", "¿qué? ¡sí!"])
    tokenizer = BertTokenizer(UNCASED_VOCAB, lowercase=lowercase, normalization="tflite")
    preprocessor = BertPreprocessor(tokenizer, sequence_length=37)
    model = convert(preprocessor)
    runtime = interpreter(model)
    inputs = runtime.get_input_details()
    for detail, value in zip(inputs, (first, second)):
        runtime.resize_tensor_input(detail["index"], value.shape)
    runtime.allocate_tensors()
    for detail, value in zip(inputs, (first, second)):
        runtime.set_tensor(detail["index"], value)
    runtime.invoke()
    got = runtime.get_tensor(runtime.get_output_details()[0]["index"])
    expected = preprocessor((first, second))
    for index, key in enumerate(("token_ids", "segment_ids", "padding_mask")):
        np.testing.assert_array_equal(got[..., index], expected[key].numpy())
    assert got[..., 2].sum() > 0.5 * got[..., 2].size  # real tokens were packed
