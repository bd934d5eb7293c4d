"""LoRA against full fine-tuning on the demo recipe: accuracy, speed, memory.

The demo recipe (all-MiniLM-L6-v2, 4,000 Rotten Tomatoes reviews, one epoch,
sequence length 48, batch 32) trained once per seed in full and once with
`backbone.enable_lora(rank)` on query and value; test accuracy on the 1,281
held-out reviews, training examples/s and the process's peak resident memory
(each run in its own process, so peaks do not mix).

    python benchmarks/lora.py [--seeds 0 1 2] [--backend torch] [--rank 8]
        [--lora-learning-rate 1e-3] [--targets query,value] [--modes full lora]
"""

import argparse
import dataclasses
import json
import resource
import sys

import numpy as np
from common import print_table, run_worker


def worker(mode, seed, rank, learning_rate, targets):
    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE, LABELS, sentiment_splits
    from kbert.models.lora import trainable_summary

    recipe = dataclasses.replace(DEMO_RECIPE, seed=seed)
    if mode == "lora":
        recipe = dataclasses.replace(recipe, learning_rate=learning_rate)
    splits = sentiment_splits(4000, seed=0)  # one split; the seed moves init and order
    model = build_classifier(recipe, num_classes=2, num_examples=4000, id2label=LABELS)
    if mode == "lora":
        model.backbone.enable_lora(rank, target_names=targets.split(","))
    trainable, total, _ = trainable_summary(model)
    _, _, seconds = train_classifier(model, recipe, splits["train"], verbose=0)
    texts, labels = splits["test"]
    logits = model.predict(texts, batch_size=64, verbose=0)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "accuracy": float(np.mean(np.argmax(logits, -1) == np.asarray(labels))),
                "examples_per_second": 4000 / seconds,
                "peak_mib": peak_mib,
                "trainable_share": trainable / total,
            }
        )
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--lora-learning-rate", type=float, default=1e-3)
    parser.add_argument("--targets", default="query,value")
    parser.add_argument("--modes", nargs="+", default=["full", "lora"])
    parser.add_argument("--worker", nargs=5)
    args = parser.parse_args()
    if args.worker:
        mode, seed, rank, learning_rate, targets = args.worker
        return worker(mode, int(seed), int(rank), float(learning_rate), targets)
    results = {mode: [] for mode in args.modes}
    for seed in args.seeds:  # interleaved: each seed runs both
        for mode in results:
            worker_args = [mode, str(seed), str(args.rank), str(args.lora_learning_rate)]
            worker_args.append(args.targets)
            result = run_worker(__file__, ["--worker", *worker_args], args.backend)
            print(mode, seed, result, file=sys.stderr)
            results[mode].append(result)
    rows = []
    for mode, runs in results.items():
        accuracy = [r["accuracy"] for r in runs]
        rows.append(
            [
                mode if mode == "full" else f"LoRA r={args.rank} ({args.targets})",
                f"{100 * runs[0]['trainable_share']:.2f}%",
                f"{np.mean(accuracy):.4f} ± {np.std(accuracy):.4f}",
                f"{np.median([r['examples_per_second'] for r in runs]):.1f}",
                f"{np.median([r['peak_mib'] for r in runs]):.0f}",
            ]
        )
    print_table(["training", "trainable", "test accuracy", "examples/s", "peak MiB"], rows)


if __name__ == "__main__":
    main()
