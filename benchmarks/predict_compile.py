"""What XLA costs and saves in `predict` on this CPU (TensorFlow, JAX).

kbert's `predict` compiles each length bucket with XLA on JAX and, for
float32 once a model has predicted `XLA_AFTER_ROWS` rows, on TensorFlow
(`kbert.models.backbone.fastest_jit_compile`). This times successive
`predict` calls of the all-MiniLM-L6-v2 embedder on the same reviews, once
with XLA and once without (a fresh model each, in separate processes so that
neither reuses the other's compiled functions), and prints the seconds per
call: the first call holds the compile, the later ones the steady speed.

    python benchmarks/predict_compile.py [--texts 512] [--calls 3] [--backend jax]

Without XLA, JAX runs the model op by op (each op compiled on its own).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from end_to_end import cpu_description  # noqa: E402


def worker(jit_compile, texts, calls):
    import kbert
    from kbert.data import rotten_tomatoes

    reviews = rotten_tomatoes(categories=("fresh", "rotten"))[0][:texts]
    model = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    model.compile(jit_compile=jit_compile)  # applies to `predict` too
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        model.predict(reviews, batch_size=64, verbose=0)
        seconds.append(round(time.perf_counter() - start, 2))
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow")
    parser.add_argument("--worker", choices=("xla", "no-xla"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker == "xla", args.texts, args.calls)))
        return
    print(f"CPU: {cpu_description()}")
    print(
        f"{args.backend} predict, all-MiniLM-L6-v2 embedder, {args.texts} reviews, batches of 64"
    )
    for setting in ("no-xla", "xla"):
        command = [sys.executable, __file__, "--worker", setting]
        command += ["--texts", str(args.texts), "--calls", str(args.calls)]
        env = {**os.environ, "KERAS_BACKEND": args.backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
        output = subprocess.run(
            command, capture_output=True, text=True, env=env, check=True
        )
        seconds = json.loads(output.stdout.strip().splitlines()[-1])
        print(f"{setting:>7}: seconds per call {seconds}")


if __name__ == "__main__":
    main()
