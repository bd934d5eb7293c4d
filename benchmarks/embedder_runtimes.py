"""all-MiniLM-L6-v2 embeddings, strings in, on OpenVINO against sentence-transformers.

kbert's `BertTextEmbedder` is exported with `kbert.export.openvino(...,
flavour="string")` (WordPiece in the IR) and as the NNCF int8 IR at the
default 0.999 mean cosine (the exporter keeps in float the narrowest scope
that holds it; the record's `quantized.method` names it). In one process,
interleaved for `--rounds` rounds after a warm-up, each system embeds the
same Rotten Tomatoes reviews
(`end_to_end.real_texts`) in batches of 32:

- sentence-transformers `encode(texts, batch_size=32)`, float32 and bfloat16
  (it sorts by length and pads each batch to its longest text);
- the string IR at OpenVINO's default precision (bf16 on CPUs with
  AVX512_BF16 or AMX), at f32 forced, and the int8 IR, each fed the texts in
  their own order and sorted by character length (what a caller can do
  before batching), one request at a time; the default-precision and int8
  IRs also in OpenVINO's throughput mode (`OpenVinoRunner(throughput=True)`:
  a request per stream in flight), sorted by length.

Prints the CPU, texts/s, the ratio to each sentence-transformers row, and
each system's mean and worst cosine with sentence-transformers float32.

    python benchmarks/embedder_runtimes.py --workdir /tmp/kbert-embedder  # ~5 min
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from end_to_end import PRESET, _cosines, cpu_description, real_texts  # noqa: E402

BATCH = 32


def export_irs(workdir):
    import kbert

    embedder = kbert.BertTextEmbedder.from_preset(PRESET)
    paths = {
        "float": os.path.join(workdir, "string"),
        "int8": os.path.join(workdir, "string_int8"),
    }
    kbert.export.openvino(embedder, paths["float"], flavour="string", overwrite=True)
    record = kbert.export.openvino(
        embedder,
        paths["int8"],
        flavour="string",
        quantization="int8",
        overwrite=True,
    )
    quantized = record["quantized"]
    print(f"int8 IR: {quantized['method']}, float search {quantized['float_search']}")
    return {name: os.path.join(path, "openvino_model.xml") for name, path in paths.items()}


def ir_embed(runner, texts, by_length):
    import numpy as np

    if by_length:
        order = np.argsort([len(t) for t in texts], kind="stable")
    else:
        order = np.arange(len(texts))
    groups = [order[start : start + BATCH] for start in range(0, len(texts), BATCH)]
    batches = [{"text": np.array([texts[i] for i in rows], object)} for rows in groups]
    outputs = [got["embeddings"] for got in runner.map(batches)]
    out = np.zeros((len(texts), outputs[0].shape[-1]), "float32")
    for rows, got in zip(groups, outputs):
        out[rows] = got
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/kbert-embedder")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import sentence_transformers
    import torch

    from kbert.export.openvino.runner import OpenVinoRunner
    from kbert.sources import resolve_preset

    print(cpu_description())
    torch.set_num_threads(args.threads)
    xml = export_irs(args.workdir)
    reviews = real_texts(args.texts)[0]
    directory = resolve_preset(PRESET)
    st = {
        dtype: sentence_transformers.SentenceTransformer(directory, device="cpu").to(
            getattr(torch, dtype)
        )
        for dtype in ("float32", "bfloat16")
    }
    runners = {
        "default": OpenVinoRunner(xml["float"], num_threads=args.threads),
        "f32": OpenVinoRunner(xml["float"], precision="f32", num_threads=args.threads),
        "int8": OpenVinoRunner(xml["int8"], num_threads=args.threads),
        "default throughput": OpenVinoRunner(
            xml["float"], num_threads=args.threads, throughput=True
        ),
        "int8 throughput": OpenVinoRunner(
            xml["int8"], num_threads=args.threads, throughput=True
        ),
    }
    systems = {
        "sentence-transformers float32": lambda: st["float32"].encode(
            reviews, batch_size=BATCH
        ),
        "sentence-transformers bfloat16": lambda: st["bfloat16"].encode(
            reviews, batch_size=BATCH
        ),
    }
    for name, runner in runners.items():
        label = "NNCF int8" if name.startswith("int8") else runner.precision
        if runner.throughput:
            streams = runner.compiled.get_property("NUM_STREAMS")
            label += f" throughput mode ({streams} streams)"
        for by_length in (True,) if runner.throughput else (False, True):
            order = "sorted by length" if by_length else "texts' order"
            systems[f"kbert OpenVINO string IR {label}, {order}"] = (
                lambda r=runner, s=by_length: ir_embed(r, reviews, s)
            )
    reference = systems["sentence-transformers float32"]()
    cosines = {}
    for name, run in systems.items():
        cosine = _cosines(run(), reference)  # also the warm-up pass
        cosines[name] = (cosine.mean(), cosine.min())
    seconds = {name: [] for name in systems}
    for round_ in range(args.rounds):
        names = list(systems)
        names = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in names:
            start = time.perf_counter()
            systems[name]()
            seconds[name].append(time.perf_counter() - start)
    median = {name: float(np.median(times)) for name, times in seconds.items()}
    st32, st16 = (median[f"sentence-transformers {d}"] for d in ("float32", "bfloat16"))
    rows = [
        [
            name,
            f"{len(reviews) / median[name]:.1f}",
            f"{st32 / median[name]:.2f}x",
            f"{st16 / median[name]:.2f}x",
            f"{cosines[name][0]:.6f}",
            f"{cosines[name][1]:.6f}",
        ]
        for name in sorted(systems, key=median.get)
    ]
    print(
        f"\n{len(reviews)} reviews, batch {BATCH}, {args.threads} threads, "
        f"median of {args.rounds} rounds"
    )
    print_table(
        [
            "system",
            "texts/s",
            "vs ST fp32",
            "vs ST bf16",
            "mean cosine vs ST fp32",
            "worst cosine",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
