"""Batch-1 latency on torch: kbert's backbone against transformers, interleaved.

One process builds all-MiniLM-L6-v2 both ways (same weights) and alternates
their batch-1 x 32-token calls (`torch.no_grad`, eager), so a noisy machine
slows both alike; prints the medians and their ratio. Repeat it a few times
and take the median ratio.

    python benchmarks/latency.py [--rounds 400] [--length 32]
"""

import argparse
import os
import time

os.environ["KERAS_BACKEND"] = "torch"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import kbert  # noqa: E402
from kbert.sources import resolve_preset  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--length", type=int, default=32)
    args = parser.parse_args()
    hf = transformers.AutoModel.from_pretrained(resolve_preset("all_minilm_l6_v2")).eval()
    backbone = kbert.BertBackbone.from_preset("all_minilm_l6_v2")
    ids = np.random.default_rng(0).integers(1000, 30000, (1, args.length))
    zeros = torch.zeros((1, args.length), dtype=torch.int32)
    ones = torch.ones((1, args.length), dtype=torch.int32)
    kbert_inputs = {
        "token_ids": torch.from_numpy(ids.astype("int32")),
        "segment_ids": zeros,
        "padding_mask": ones,
    }
    hf_inputs = {
        "input_ids": torch.from_numpy(ids),
        "token_type_ids": zeros.long(),
        "attention_mask": ones.long(),
    }

    def run_kbert():
        with torch.no_grad():
            return backbone(kbert_inputs, training=False)["sequence_output"]

    def run_hf():
        with torch.no_grad():
            return hf(**hf_inputs).last_hidden_state

    difference = (run_kbert() - run_hf()).abs().max().item()
    times = {"kbert": [], "transformers": []}
    for _ in range(args.rounds):
        for name, run in (("kbert", run_kbert), ("transformers", run_hf)):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    medians = {name: 1e3 * float(np.median(t[20:])) for name, t in times.items()}
    print(
        f"batch 1 x {args.length}, torch eager: kbert {medians['kbert']:.2f} ms, "
        f"transformers {medians['transformers']:.2f} ms, "
        f"ratio {medians['kbert'] / medians['transformers']:.2f} "
        f"(max |diff| {difference:.1e})"
    )


if __name__ == "__main__":
    main()
