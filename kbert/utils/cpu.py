"""This machine's CPU: its name, and the instructions kbert's choices depend on.

Example:
>>> isinstance(cpu_name(), str), isinstance(int8_products_saturate(), bool)
(True, True)
"""

import platform

# x86 instructions that add uint8 x int8 products straight into int32.
EXACT_INT8_DOT = ("avx512_vnni", "avx_vnni", "amx_int8")
CPUINFO = "/proc/cpuinfo"


def _cpuinfo_field(name):
    """The first `name: value` line's value in /proc/cpuinfo (None: no such
    file or field)."""
    try:
        with open(CPUINFO, encoding="utf-8") as file:
            for line in file:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_name():
    """This machine's CPU model, as /proc/cpuinfo names it (else `platform`)."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_flags():
    """The instruction-set flags /proc/cpuinfo lists (None where it lists
    none: not Linux, or not x86)."""
    flags = _cpuinfo_field("flags")
    return set(flags.split()) if flags else None


def int8_products_saturate():
    """Whether onnxruntime's uint8 x int8 matmuls can saturate on this CPU.

    On x86 without VNNI or AMX (AMD Zen 3 and older, Intel Skylake and
    older), onnxruntime multiplies uint8 activations by int8 weights with
    VPMADDUBSW, which adds each pair of products in int16: 2 x 255 x 127
    passes its 32,767, so large activations against large weights are
    clipped. Quantized weights of 7 bits (`reduce_range`) keep every pair in
    range (measured on an AMD Zen 3: export/README.md, Quantized ONNX).
    x86 whose flags cannot be read counts as saturating; other machines
    (ARM's dot products accumulate in int32) do not.
    """
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return False
    flags = cpu_flags()
    return flags is None or not any(flag in flags for flag in EXACT_INT8_DOT)
