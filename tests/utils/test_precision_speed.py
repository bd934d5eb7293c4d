"""A precision slower than float32 on this backend and CPU is not taken silently."""

import warnings

import keras
import pytest

import kbert
from kbert.utils import precision_speed
from tests.test_case import tiny_backbone


@pytest.fixture
def timings(monkeypatch):
    """Matmul seconds per dtype, as the CPU would measure them; counts calls."""
    seconds = {"float32": 0.001, "bfloat16": 0.001, "float16": 0.001}
    calls = []
    monkeypatch.setattr(precision_speed, "_SLOWDOWNS", {})
    monkeypatch.setattr(precision_speed, "_on_accelerator", lambda: False)

    def matmul_seconds(dtype):
        calls.append(dtype)
        return seconds[dtype]

    monkeypatch.setattr(precision_speed, "_matmul_seconds", matmul_seconds)
    return seconds, calls


def slow_precision_warnings(dtype):
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        tiny_backbone(dtype=dtype)
    return [w for w in found if issubclass(w.category, kbert.SlowPrecisionWarning)]


def test_a_slow_bfloat16_warns_with_the_measured_factor(timings):
    seconds, calls = timings
    seconds["bfloat16"] = 0.057  # PyTorch on a CPU without AVX512-BF16 or AMX
    found = slow_precision_warnings("mixed_bfloat16")
    assert len(found) == 1
    message = str(found[0].message)
    assert message.startswith("bfloat16 runs 57x slower than float32 on this CPU")
    assert f"the {keras.backend.backend()} backend" in message
    assert 'dtype="float32"' in message
    # Measured once per process: a second model reuses the figure.
    assert len(slow_precision_warnings("bfloat16")) == 1
    assert calls == ["bfloat16", "float32"]
    # Users can escalate it.
    with warnings.catch_warnings():
        warnings.simplefilter("error", kbert.SlowPrecisionWarning)
        with pytest.raises(kbert.SlowPrecisionWarning, match="57x slower"):
            tiny_backbone(dtype="bfloat16")


def test_a_precision_near_float32_speed_is_quiet(timings):
    seconds, calls = timings
    seconds["bfloat16"] = 0.00105  # 1.05x: under the bound
    seconds["float16"] = 0.0008
    assert not slow_precision_warnings("mixed_bfloat16")
    assert not slow_precision_warnings("mixed_float16")
    assert not slow_precision_warnings("float32")
    assert "float32" in calls and calls.count("bfloat16") == 1


def test_a_bfloat16_a_third_slower_warns_too(timings):
    seconds, _ = timings
    seconds["bfloat16"] = 0.0013  # JAX's XLA on an AMD Zen 4: 1.3-1.5x
    seconds["float16"] = 0.132  # as slow as PyTorch's bf16 on a Zen 3 (132x)
    found = slow_precision_warnings("bfloat16")
    assert len(found) == 1
    assert str(found[0].message).startswith("bfloat16 runs 1.3x slower than float32")
    found = slow_precision_warnings("float16")
    assert str(found[0].message).startswith("float16 runs 132x slower than float32")


def test_on_an_accelerator_nothing_is_timed(timings, monkeypatch):
    seconds, calls = timings
    seconds["bfloat16"] = 1.0
    monkeypatch.setattr(precision_speed, "_on_accelerator", lambda: True)
    assert not slow_precision_warnings("mixed_bfloat16")
    assert calls == []


def test_the_real_measurement_times_this_backend(monkeypatch):
    monkeypatch.setattr(precision_speed, "_SLOWDOWNS", {})
    slowdown = precision_speed.precision_slowdown("bfloat16")
    assert precision_speed._SLOWDOWNS == {(keras.backend.backend(), "bfloat16"): slowdown}
    # A matmul of 256x256 takes between 10 microseconds and a second.
    assert 1e-5 < slowdown < 1e5
    assert precision_speed.precision_slowdown("float32") == 1.0
