"""Fine-tuning: kbert on each backend vs Hugging Face transformers, one recipe.

Same split (seeded Rotten Tomatoes fresh/rotten), same starting weights
(all-MiniLM-L6-v2), sequence length, batch size, learning rate, linear
warm-up/decay schedule, AdamW (no decay on LayerNorm and biases, clip 1.0),
epochs, seed and data order (`FinetuneRecipe.epoch_order`). Prints test
accuracy and training examples/s, with ratios to HF. With several `--seeds`
(training seeds; the split stays the seed-0 split) it prints the mean and
standard deviation over the seeds: one seed's accuracy moves by more than
half a point from dropout and data order alone.

    python benchmarks/finetune_vs_hf.py                      # 4000 training reviews
    python benchmarks/finetune_vs_hf.py --seeds 0 1 2        # mean of three seeds
    python benchmarks/finetune_vs_hf.py --train-examples 0   # the full 10,246
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, run_worker  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")
SPLIT_SEED = 0


def hf_worker(train_examples, recipe):
    import numpy as np
    import torch
    import transformers

    from kbert.finetuning.sentiment_demo import sentiment_splits
    from kbert.sources import resolve_source

    torch.manual_seed(recipe.seed)
    splits = sentiment_splits(train_examples, seed=SPLIT_SEED)
    directory = resolve_source(recipe.preset)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertForSequenceClassification.from_pretrained(
        directory, num_labels=2
    )

    def encode(texts):
        return tokenizer(
            texts,
            padding="max_length",
            truncation=True,
            max_length=recipe.sequence_length,
            return_tensors="pt",
        )

    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
            "weight_decay": recipe.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if n.endswith(no_decay)],
            "weight_decay": 0.0,
        },
    ]
    texts, labels = splits["train"]
    optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate, eps=1e-8)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, recipe.warmup_steps(len(texts)), recipe.total_steps(len(texts))
    )
    labels = np.asarray(labels)
    start = time.perf_counter()
    model.train()
    for epoch in range(recipe.epochs):
        order = recipe.epoch_order(len(texts), epoch)
        for first in range(0, len(order), recipe.batch_size):
            index = order[first : first + recipe.batch_size]
            batch = encode([texts[i] for i in index])
            loss = model(**batch, labels=torch.from_numpy(labels[index])).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    seconds = time.perf_counter() - start
    model.eval()
    test_texts, test_labels = splits["test"]
    predictions = []
    with torch.no_grad():
        for first in range(0, len(test_texts), 64):
            logits = model(**encode(test_texts[first : first + 64])).logits
            predictions.append(logits.argmax(-1).numpy())
    accuracy = float(np.mean(np.concatenate(predictions) == np.asarray(test_labels)))
    return {
        "accuracy": accuracy,
        "examples_per_second": recipe.epochs * len(texts) / seconds,
    }


def kbert_worker(train_examples, recipe):
    import numpy as np

    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.sentiment_demo import sentiment_splits

    splits = sentiment_splits(train_examples, seed=SPLIT_SEED)
    texts, labels = splits["train"]
    model = build_classifier(recipe, num_classes=2, num_examples=len(texts))
    _, _, seconds = train_classifier(model, recipe, (texts, labels), verbose=0)
    test_texts, test_labels = splits["test"]
    logits = model.predict(test_texts, batch_size=64, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, -1) == np.asarray(test_labels)))
    return {
        "accuracy": accuracy,
        "examples_per_second": recipe.epochs * len(texts) / seconds,
    }


def _summary(results, key):
    import numpy as np

    values = np.array([r[key] for r in results])
    return values.mean(), values.std()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-examples", type=int, default=4000, help="0 = all")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--worker", choices=["hf", "kbert"], help=argparse.SUPPRESS)
    args = parser.parse_args()

    from kbert.finetuning.recipe import FinetuneRecipe
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE

    if args.worker:
        recipe = FinetuneRecipe(
            **{**vars(DEMO_RECIPE), "epochs": args.epochs, "seed": args.seeds[0]}
        )
        worker = hf_worker if args.worker == "hf" else kbert_worker
        print(json.dumps(worker(args.train_examples or None, recipe)))
        return
    common = ["--train-examples", str(args.train_examples), "--epochs", str(args.epochs)]
    runs = {("transformers (torch)", "torch"): "hf"}
    runs.update({(f"kbert ({b})", b): "kbert" for b in args.backends})
    results = {run: [] for run in runs}
    for seed in args.seeds:
        for (name, backend), worker in runs.items():
            result = run_worker(
                __file__, ["--worker", worker, "--seeds", str(seed), *common], backend
            )
            print(f"seed {seed}, {name}: {json.dumps(result)}", flush=True)
            results[name, backend].append(result)
    hf = results["transformers (torch)", "torch"]
    hf_accuracy, _ = _summary(hf, "accuracy")
    hf_speed, _ = _summary(hf, "examples_per_second")
    rows = []
    for run, result in results.items():
        accuracy, spread = _summary(result, "accuracy")
        speed, _ = _summary(result, "examples_per_second")
        rows.append(
            [
                run[0],
                f"{accuracy:.4f}" + (f" ± {spread:.4f}" if len(args.seeds) > 1 else ""),
                f"{100 * (accuracy - hf_accuracy):+.2f}",
                f"{speed:.2f}",
                f"{speed / hf_speed:.2f}",
            ]
        )
    print(
        f"\nRecipe: {DEMO_RECIPE}; training seeds {args.seeds}; "
        f"train examples: {args.train_examples or 'all'}"
    )
    print_table(["run", "test accuracy", "points vs HF", "train examples/s", "x HF"], rows)


if __name__ == "__main__":
    main()
