"""The GELUs: registered for serialization, resolvable by every spelling."""

import keras
import pytest

from kbert.layers.activations import gelu, gelu_approximate, get_activation


@pytest.mark.parametrize("function", [gelu, gelu_approximate])
def test_activation_serialization_round_trip(function):
    config = keras.saving.serialize_keras_object(function)
    assert keras.saving.deserialize_keras_object(config) is function


@pytest.mark.parametrize(
    "name, function",
    [
        ("gelu", gelu),
        ("gelu_new", gelu_approximate),
        ("gelu_pytorch_tanh", gelu_approximate),
    ],
)
def test_hf_spellings_resolve(name, function):
    assert get_activation(name) is function
