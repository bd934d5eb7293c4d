import keras
import pytest


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
