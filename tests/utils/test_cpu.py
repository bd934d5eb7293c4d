"""kbert.utils.cpu: the CPU's name and whether its int8 products saturate,
read from /proc/cpuinfo (a file written here stands in for it)."""

import platform

import pytest

from kbert.utils import cpu

pytestmark = pytest.mark.backend_independent

ZEN3 = "avx avx2 fma bmi2 sha_ni vaes vpclmulqdq"


def _cpuinfo(tmp_path, monkeypatch, flags, name="AMD EPYC", machine="x86_64"):
    path = tmp_path / "cpuinfo"
    lines = [
        f"processor\t: {n}\nmodel name\t: {name}\nflags\t\t: {flags}\n" for n in (0, 1)
    ]
    path.write_text("\n".join(lines))
    monkeypatch.setattr(cpu, "CPUINFO", str(path))
    monkeypatch.setattr(platform, "machine", lambda: machine)


@pytest.mark.parametrize(
    "flags, saturate",
    [
        (ZEN3, True),  # AVX2 only: VPMADDUBSW adds pairs in int16
        (ZEN3 + " avx512f avx512bw", True),  # AVX-512 without VNNI (Skylake-SP)
        (ZEN3 + " avx512f avx512_vnni", False),  # Zen 4, Cascade Lake and later
        (ZEN3 + " avx_vnni", False),  # Alder Lake's 256-bit VNNI
        (ZEN3 + " avx512_vnni amx_bf16 amx_int8 amx_tile", False),  # Sapphire Rapids
    ],
)
def test_int8_products_saturate_without_vnni_or_amx(tmp_path, monkeypatch, flags, saturate):
    _cpuinfo(tmp_path, monkeypatch, flags)
    assert cpu.int8_products_saturate() is saturate
    assert cpu.cpu_flags() == set(flags.split())
    assert cpu.cpu_name() == "AMD EPYC"


def test_unknown_x86_counts_as_saturating_and_arm_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "CPUINFO", str(tmp_path / "missing"))
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert cpu.cpu_flags() is None
    assert cpu.int8_products_saturate() is True
    _cpuinfo(tmp_path, monkeypatch, "fp asimd asimddp", name="", machine="aarch64")
    assert cpu.int8_products_saturate() is False
    assert cpu.cpu_name()  # no model name: platform's answer


def test_named_int8_recipes_take_seven_bit_weights_where_products_saturate(monkeypatch):
    from kbert.export.onnx import quantization

    for saturate in (True, False):
        monkeypatch.setattr(quantization, "int8_products_saturate", lambda s=saturate: s)
        for name in ("dynamic_int8", "int8"):
            assert quantization.recipe_for(name).reduce_range is saturate, name
        assert quantization.recipe_for("float16") == quantization.RECIPES["float16"]
        given = quantization.QuantizationRecipe("dynamic")
        assert quantization.recipe_for(given) is given  # a recipe is taken as given
