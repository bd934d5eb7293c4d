"""Encoder inference speed: kbert vs keras-hub vs HF transformers, one run.

Throughput: sequences/s at batch 32 x seq 128. Latency: ms at batch 1 x seq 32.
kbert and keras-hub run their compiled path per backend (XLA through
`tf.function(jit_compile=True)` on TensorFlow, `jax.jit` on JAX, eager on
torch); HF `BertModel` runs in torch eager mode (its default, SDPA attention).

    python benchmarks/encoder.py                 # MiniLM-L6 and bert-base shapes
    python benchmarks/encoder.py --shapes minilm --repeats 5
    python benchmarks/encoder.py --interleaved --repeats 8   # close calls, see below

Separate processes measured one after the other see different machine
states; `--interleaved` settles close calls: per backend, one process builds
kbert and keras-hub and alternates their batch-32 calls, then prints the
ratio of the medians.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import keras_forward, print_table, run_worker, time_call  # noqa: E402

SHAPES = {
    "minilm": dict(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536),
    "bert_base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
}
VOCABULARY_SIZE = 30522
THROUGHPUT_BATCH = (32, 128)
LATENCY_BATCH = (1, 32)
BACKENDS = ("tensorflow", "jax", "torch")


def inputs(batch, length):
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "token_ids": rng.integers(1000, VOCABULARY_SIZE, (batch, length)).astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }


def worker(library, shape, repeats):
    config = SHAPES[shape]
    if library == "transformers":
        import torch
        import transformers

        model = transformers.BertModel(
            transformers.BertConfig(
                vocab_size=VOCABULARY_SIZE,
                num_hidden_layers=config["num_layers"],
                num_attention_heads=config["num_heads"],
                hidden_size=config["hidden_dim"],
                intermediate_size=config["intermediate_dim"],
            )
        ).eval()

        def forward(x):
            with torch.no_grad():
                return model(
                    input_ids=torch.from_numpy(x["token_ids"]).long(),
                    token_type_ids=torch.from_numpy(x["segment_ids"]).long(),
                    attention_mask=torch.from_numpy(x["padding_mask"]).long(),
                )
    else:
        if library == "kbert":
            import kbert

            model = kbert.BertBackbone(vocabulary_size=VOCABULARY_SIZE, **config)
        else:
            import keras_hub

            model = keras_hub.models.BertBackbone(
                vocabulary_size=VOCABULARY_SIZE, max_sequence_length=512, **config
            )
        forward = keras_forward(model)
    big, small = inputs(*THROUGHPUT_BATCH), inputs(*LATENCY_BATCH)
    throughput = THROUGHPUT_BATCH[0] / time_call(lambda: forward(big), repeats)
    latency = 1000 * time_call(lambda: forward(small), max(repeats, 10), warmup=2)
    print(json.dumps({"throughput": throughput, "latency_ms": latency}))


def interleaved_worker(shape, repeats):
    import time

    import keras_hub
    import numpy as np

    import kbert

    config = SHAPES[shape]
    forwards = {
        "kbert": keras_forward(
            kbert.BertBackbone(vocabulary_size=VOCABULARY_SIZE, **config)
        ),
        "keras_hub": keras_forward(
            keras_hub.models.BertBackbone(
                vocabulary_size=VOCABULARY_SIZE, max_sequence_length=512, **config
            )
        ),
    }
    big = inputs(*THROUGHPUT_BATCH)
    times = {name: [] for name in forwards}
    for step in range(repeats + 2):  # two warm-up rounds
        for name, forward in forwards.items():
            start = time.perf_counter()
            forward(big)
            if step >= 2:
                times[name].append(time.perf_counter() - start)
    medians = {name: float(np.median(t)) for name, t in times.items()}
    print(json.dumps(medians))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--interleaved", action="store_true")
    parser.add_argument(
        "--worker", nargs=2, metavar=("LIBRARY", "SHAPE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        if args.worker[0] == "interleaved":
            return interleaved_worker(args.worker[1], args.repeats)
        return worker(*args.worker, args.repeats)
    if args.interleaved:
        rows = []
        for shape in args.shapes:
            for backend in BACKENDS:
                medians = run_worker(
                    __file__,
                    ["--worker", "interleaved", shape, "--repeats", str(args.repeats)],
                    backend,
                )
                rows.append(
                    [
                        shape,
                        backend,
                        f"{medians['kbert']:.3f}",
                        f"{medians['keras_hub']:.3f}",
                        f"{medians['keras_hub'] / medians['kbert']:.3f}",
                    ]
                )
        print_table(
            ["shape", "backend", "kbert s/batch", "keras-hub s/batch", "kbert speed x hub"],
            rows,
        )
        return
    for shape in args.shapes:
        reference = run_worker(
            __file__, ["--worker", "transformers", shape, "--repeats", str(args.repeats)]
        )
        results = {}
        for backend in BACKENDS:
            for library in ("kbert", "keras_hub"):
                results[library, backend] = run_worker(
                    __file__,
                    ["--worker", library, shape, "--repeats", str(args.repeats)],
                    backend,
                )
        rows = [
            [
                "transformers (torch eager)",
                "torch",
                f"{reference['throughput']:.1f}",
                "1.00",
                "",
                f"{reference['latency_ms']:.1f}",
                "1.00",
                "",
            ]
        ]
        for backend in BACKENDS:
            for library in ("kbert", "keras_hub"):
                r, hub = results[library, backend], results["keras_hub", backend]
                rows.append(
                    [
                        library,
                        backend,
                        f"{r['throughput']:.1f}",
                        f"{r['throughput'] / reference['throughput']:.2f}",
                        f"{r['throughput'] / hub['throughput']:.2f}",
                        f"{r['latency_ms']:.1f}",
                        f"{reference['latency_ms'] / r['latency_ms']:.2f}",
                        f"{hub['latency_ms'] / r['latency_ms']:.2f}",
                    ]
                )
        print(
            f"\n{shape}: throughput at batch {THROUGHPUT_BATCH}, latency at batch {LATENCY_BATCH}"
        )
        print_table(
            [
                "library",
                "backend",
                "seq/s",
                "x HF",
                "x keras-hub",
                "latency ms",
                "speed x HF",
                "speed x keras-hub",
            ],
            rows,
        )


if __name__ == "__main__":
    main()
