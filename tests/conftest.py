import os
import sys

import keras
import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
