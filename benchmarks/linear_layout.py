"""A Dense layer's three torch forms on MiniLM's shapes, float32 and bfloat16.

Keras' Dense runs `matmul(x, kernel) + bias`, two ops; torch's `linear`
folds the bias into the matmul (`addmm`), on the kernel as a transposed view
(no copy) or on a copy in torch's own `Linear` layout (out, in), which is what
transformers runs. `kbert/layers/fused_projection.py` takes the view from
these figures. Interleaved per round, medians, the CPU named first.

    python benchmarks/linear_layout.py
    python benchmarks/linear_layout.py --batch 32 --length 128 --rounds 15
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from end_to_end import cpu_description  # noqa: E402

# all-MiniLM-L6-v2: query/key/value fused (384 -> 1152), attention output,
# intermediate, output.
SHAPES = ((384, 1152), (384, 384), (384, 1536), (1536, 384))


FORMS = ("matmul + add (Keras Dense)", "linear, transposed view", "linear, (out, in) copy")


def forms(x, kernel, bias):
    """`{name: call}` of the three forms, named as in `FORMS`."""
    import torch

    weight = kernel.T.contiguous()
    calls = (
        lambda: torch.matmul(x, kernel) + bias,
        lambda: torch.nn.functional.linear(x, kernel.T, bias),
        lambda: torch.nn.functional.linear(x, weight, bias),
    )
    return dict(zip(FORMS, calls))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    import torch

    torch.set_grad_enabled(False)
    torch.manual_seed(0)
    print(
        f"CPU: {cpu_description()}; torch {torch.__version__}; "
        f"x: ({args.batch}, {args.length}, units in), as in an encoder"
    )
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for units_in, units_out in SHAPES:
            x = torch.randn(args.batch, args.length, units_in).to(dtype)
            kernel = (torch.randn(units_in, units_out) * 0.05).to(dtype)
            bias = torch.randn(units_out).to(dtype)
            functions = forms(x, kernel, bias)
            times = {name: [] for name in functions}
            for function in functions.values():  # warm-up
                function()
            for _ in range(args.rounds):
                for name, function in functions.items():
                    start = time.perf_counter()
                    function()
                    times[name].append(time.perf_counter() - start)
            medians = {name: statistics.median(t) for name, t in times.items()}
            base = medians[FORMS[0]]
            rows.append(
                [str(dtype).removeprefix("torch."), f"{units_in} -> {units_out}"]
                + [f"{m * 1e3:.2f} ms ({base / m:.2f}x)" for m in medians.values()]
            )
    print_table(["dtype", "shape", *FORMS], rows)


if __name__ == "__main__":
    main()
