"""Where an OpenVINO IR spends its time on this CPU: per node type, one batch.

Compiles the IR for the CPU plugin with `PERF_COUNT` on (plugin defaults:
bf16 where the CPU has it; `--precision f32` forces float32,
`--no-snippets` sets `SNIPPETS_MODE=DISABLE`, which leaves attention as
separate MatMul, Softmax and Add nodes instead of one fused subgraph), runs
a token-id batch of `--batch` rows of `--length` real tokens `--repeats`
times after a warm-up, and prints each node type's median time per call
(with the kernel it ran, e.g. `brgemm_avx512_amx_I8`) and its share, and
the wall time per call.

    python benchmarks/openvino_profile.py /tmp/kbert-runtimes/openvino_int8/openvino_model.xml
    python benchmarks/openvino_profile.py IR.xml --length 48 --no-snippets
"""

import argparse
import collections
import time

import numpy as np


def profile(xml, batch, length, repeats, config):
    import openvino

    from kbert.export.openvino.runner import takes_strings

    if takes_strings(xml):
        raise SystemExit(
            f"{xml} takes strings: profile its token-id IR "
            "(kbert.export.openvino(..., flavour='token_ids'))."
        )
    core = openvino.Core()
    compiled = core.compile_model(
        core.read_model(xml), "CPU", {"PERF_COUNT": "YES", **config}
    )
    request = compiled.create_infer_request()
    feeds = {
        port.get_any_name(): np.ones((batch, length), port.get_element_type().to_dtype())
        for port in compiled.inputs
    }
    for _ in range(3):
        request.infer(feeds)
    per_call = collections.defaultdict(list)
    walls = []
    for _ in range(repeats):
        began = time.perf_counter()
        request.infer(feeds)
        walls.append(time.perf_counter() - began)
        totals = collections.Counter()
        for node in request.profiling_info:
            totals[(node.node_type, node.exec_type)] += node.real_time.total_seconds()
        for key, seconds in totals.items():
            per_call[key].append(seconds)
    medians = {key: float(np.median(values)) * 1e3 for key, values in per_call.items()}
    return medians, float(np.median(walls)) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", help="an OpenVINO IR (.xml) with token-id inputs")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--precision", help="INFERENCE_PRECISION_HINT (default: the plugin's)"
    )
    parser.add_argument("--no-snippets", action="store_true")
    args = parser.parse_args()
    config = {}
    if args.precision:
        config["INFERENCE_PRECISION_HINT"] = args.precision
    if args.no_snippets:
        config["SNIPPETS_MODE"] = "DISABLE"
    medians, wall = profile(args.xml, args.batch, args.length, args.repeats, config)
    total = sum(medians.values())
    print(f"{args.xml}: batch {args.batch} x {args.length} tokens, config {config}")
    print(f"wall {wall:.2f} ms per call; node times sum to {total:.2f} ms")
    for (node_type, kernel), ms in sorted(medians.items(), key=lambda kv: -kv[1])[:12]:
        print(f"{ms:8.3f} ms {100 * ms / total:5.1f}%  {node_type} ({kernel})")


if __name__ == "__main__":
    main()
