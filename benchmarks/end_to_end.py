"""Real text, end to end: kbert against what users would pick instead.

Inference (default): strings -> sentence embeddings and strings -> class
predictions on 2,000 Rotten Tomatoes reviews (short, ~27 word pieces) and
200 plot summaries (long; truncated at 256 word pieces, as sentence-transformers
truncates all-MiniLM-L6-v2), plus the encoder alone on
32 x 128 token ids. One process per Keras backend runs, interleaved in
rounds (so a noisy machine slows every system alike), kbert in float32 and
bfloat16 against

- sentence-transformers `encode(texts, batch_size=32)`, float32 and bfloat16;
- a transformers `AutoModel` loop as its users write it: sorted by length,
  `tokenizer(batch, padding=True, truncation=True)` (dynamic padding), mean
  pooling, float32 and bfloat16;
- transformers `AutoModelForSequenceClassification` on the same classifier
  (written by `kbert.save_hf`), dynamic padding.

Fine-tuning (`--finetune`): the demo recipe (all-MiniLM-L6-v2, 4,000
training reviews, batch 32, AdamW 1e-4, 10% warm-up, linear decay, 1 epoch)
with kbert's `fit` on raw strings against a transformers training loop with
`DataCollatorWithPadding` (each batch padded to its longest review), the same
data order, for each `--seeds` value; test accuracy on 1,281 reviews and
training examples/s (compilation included: it is what a fine-tune costs).

Prints the CPU (from `lscpu`) first, then medians, ratios and parity.

    python benchmarks/end_to_end.py                       # inference, every backend
    python benchmarks/end_to_end.py --finetune --seeds 0 1 2
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import keras_forward, print_table, run_worker  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")
PRESET = "all_minilm_l6_v2"
BATCH_SIZE = 32
SPLIT_SEED = 0


def cpu_description():
    """The CPU model and its vector / matrix flags, from `lscpu`."""
    fields = {}
    output = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in output.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")
    flags = [flag for flag in wanted if flag in fields.get("Flags", "").split()]
    return (
        f"{fields.get('Model name', '?')}, {fields.get('CPU(s)', '?')} CPUs; "
        f"flags: {' '.join(flags) or 'none of ' + ' '.join(wanted)}"
    )


def real_texts(count):
    """`count` seeded Rotten Tomatoes reviews and 200 non-empty plot summaries."""
    import numpy as np

    from kbert.data import rotten_tomatoes

    reviews, _ = rotten_tomatoes(categories=("fresh", "rotten"))
    order = np.random.RandomState(SPLIT_SEED).permutation(len(reviews))[:count]
    plots, _ = rotten_tomatoes(categories=("plot",))
    return [reviews[i] for i in order], [plot for plot in plots if plot.strip()][:200]


# === Inference ===


def _hf_batches(tokenizer, texts):
    """What a transformers user writes: sort by length, pad each batch to its
    longest text (at most sentence-transformers' max_seq_length, 256); yields
    `(index, batch)` so outputs go back in input order."""
    import numpy as np

    order = np.argsort([-len(text) for text in texts], kind="stable")
    for first in range(0, len(texts), BATCH_SIZE):
        index = order[first : first + BATCH_SIZE]
        batch = tokenizer(
            [texts[i] for i in index],
            padding=True,
            truncation=True,
            max_length=256,
            return_tensors="pt",
        )
        yield index, batch


def _hf_embedding_loop(model, tokenizer, texts, torch):
    """Length-sorted dynamic padding, mean-pool, normalize; input order."""
    import numpy as np

    out = np.zeros((len(texts), model.config.hidden_size), "float32")
    with torch.inference_mode():
        for index, batch in _hf_batches(tokenizer, texts):
            hidden = model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"][..., None].float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out[index] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    return out


def _hf_classifier_loop(model, tokenizer, texts, torch):
    import numpy as np

    out = np.zeros((len(texts), model.config.num_labels), "float32")
    with torch.inference_mode():
        for index, batch in _hf_batches(tokenizer, texts):
            out[index] = model(**batch).logits.float().numpy()
    return out


def _cosines(a, b):
    import numpy as np

    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def inference_worker(count, rounds):
    import tempfile

    import keras
    import numpy as np
    import sentence_transformers
    import torch
    import transformers

    import kbert
    from kbert.sources import resolve_preset

    backend = keras.backend.backend()
    directory = resolve_preset(PRESET)
    reviews, plots = real_texts(count)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)

    def sentence_transformer(dtype):
        model = sentence_transformers.SentenceTransformer(directory, device="cpu")
        return model.to(dtype)

    def hf_model(cls, path, dtype):
        return cls.from_pretrained(path, dtype=dtype).eval()

    # kbert's classifier, written out so that transformers runs the same weights.
    classifier = kbert.BertClassifier.from_preset(PRESET, num_classes=2)
    hf_directory = tempfile.mkdtemp(prefix="kbert-e2e-")
    kbert.save_hf(classifier, hf_directory)
    precisions = {"fp32": "float32", "bf16": "bfloat16"}
    embedders = {
        name: kbert.BertTextEmbedder.from_preset(PRESET, dtype=dtype)
        for name, dtype in precisions.items()
    }
    classifiers = {
        "fp32": classifier,
        "bf16": kbert.BertClassifier.from_preset(hf_directory, dtype="bfloat16"),
    }
    st = {
        "fp32": sentence_transformer(torch.float32),
        "bf16": sentence_transformer(torch.bfloat16),
    }
    hf = {
        name: hf_model(transformers.AutoModel, directory, getattr(torch, dtype))
        for name, dtype in precisions.items()
    }
    hf_classifier = hf_model(
        transformers.AutoModelForSequenceClassification, hf_directory, torch.float32
    )

    systems = {}
    for name in precisions:
        systems[f"embed/sentence-transformers {name}"] = lambda t, m=st[name]: m.encode(
            t, batch_size=BATCH_SIZE
        )
        systems[f"embed/transformers {name}"] = lambda t, m=hf[name]: _hf_embedding_loop(
            m, tokenizer, t, torch
        )
        systems[f"embed/kbert {name}"] = lambda t, m=embedders[name]: m.predict(
            t, batch_size=BATCH_SIZE, verbose=0
        )
    if backend == "tensorflow":  # is XLA worth its compilations on this CPU?
        no_xla = kbert.BertTextEmbedder.from_preset(PRESET)
        no_xla.compile(jit_compile=False)
        systems["embed/kbert fp32 no-XLA"] = lambda t: no_xla.predict(
            t, batch_size=BATCH_SIZE, verbose=0
        )
        xla = kbert.BertTextEmbedder.from_preset(PRESET)
        xla.compile(jit_compile=True)
        systems["embed/kbert fp32 XLA"] = lambda t: xla.predict(
            t, batch_size=BATCH_SIZE, verbose=0
        )
    systems["classify/transformers fp32"] = lambda t: _hf_classifier_loop(
        hf_classifier, tokenizer, t, torch
    )
    for name, model in classifiers.items():
        systems[f"classify/kbert {name}"] = lambda t, m=model: m.predict(
            t, batch_size=BATCH_SIZE, verbose=0
        )

    results = {}
    for texts_name, texts in (("reviews", reviews), ("plots", plots)):
        outputs, first_call, times = {}, {}, {name: [] for name in systems}
        for name, run in systems.items():  # first calls: compilation included
            start = time.perf_counter()
            outputs[name] = np.asarray(run(texts), "float32")
            first_call[name] = time.perf_counter() - start
        for _ in range(rounds):
            for name, run in systems.items():
                start = time.perf_counter()
                run(texts)
                times[name].append(time.perf_counter() - start)
        reference = outputs["embed/sentence-transformers fp32"]
        parity = {
            name: {
                "mean_cosine": float(_cosines(outputs[name], reference).mean()),
                "worst_cosine": float(_cosines(outputs[name], reference).min()),
            }
            for name in systems
            if name.startswith("embed/")
        }
        # Same weights as transformers' classifier (a random head: its margins are
        # tiny, so only float32 is compared; bf16 against fp32 on a trained head
        # is asserted in tests/models/test_precision.py).
        hf_argmax = outputs["classify/transformers fp32"].argmax(-1)
        agreement = np.mean(outputs["classify/kbert fp32"].argmax(-1) == hf_argmax)
        parity["classify/kbert fp32"] = {"argmax_agreement": float(agreement)}
        results[texts_name] = {
            "count": len(texts),
            "texts_per_second": {
                name: len(texts) / float(np.median(t)) for name, t in times.items()
            },
            "first_call_seconds": first_call,
            "parity": parity,
        }

    # The encoder alone: 32 x 128 token ids, float32, kbert vs transformers.
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, (32, 128)).astype("int32")
    features = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    forward = keras_forward(embedders["fp32"].backbone)
    hf_inputs = {"input_ids": torch.from_numpy(ids).long()}
    encoder = {
        "kbert": lambda: forward(features),
        "transformers": lambda: hf["fp32"](**hf_inputs),
    }
    encoder_times = {name: [] for name in encoder}
    with torch.inference_mode():
        for name in encoder:
            encoder[name]()
        for _ in range(max(rounds, 3)):
            for name, run in encoder.items():
                start = time.perf_counter()
                run()
                encoder_times[name].append(time.perf_counter() - start)
    results["encoder_32x128"] = {
        name: 32 / float(np.median(t)) for name, t in encoder_times.items()
    }
    results["backend"] = backend
    print(json.dumps(results))


def report_inference(results):
    for texts_name in ("reviews", "plots"):
        print(
            f"\n## strings -> outputs, {texts_name}, batch {BATCH_SIZE} (texts/s, median)"
        )
        rows = []
        for backend, result in results.items():
            part = result[texts_name]
            speed = part["texts_per_second"]
            for name, value in speed.items():
                if "kbert" not in name and backend != BACKENDS[0]:
                    continue  # the peers' rows: once is enough, ratios use their own run
                task, system = name.split("/")
                precision = "bf16" if "bf16" in system else "fp32"
                peer = {
                    "embed": f"embed/sentence-transformers {precision}",
                    "classify": "classify/transformers fp32",
                }[task]
                parity = part["parity"].get(name, {})
                rows.append(
                    [
                        task,
                        system + ("" if "kbert" not in name else f" ({backend})"),
                        f"{value:.1f}",
                        f"{value / speed[peer]:.2f}",
                        f"{part['first_call_seconds'][name]:.1f}",
                        ", ".join(f"{k} {v:.6f}" for k, v in parity.items()),
                    ]
                )
        print_table(["task", "system", "texts/s", "x peer", "first call s", "parity"], rows)
    print("\n## encoder alone, 32 x 128 token ids, float32 (sequences/s, median)")
    rows = []
    for backend, result in results.items():
        encoder = result["encoder_32x128"]
        rows.append(
            [
                backend,
                f"{encoder['kbert']:.1f}",
                f"{encoder['transformers']:.1f}",
                f"{encoder['kbert'] / encoder['transformers']:.2f}",
            ]
        )
    print_table(["kbert backend", "kbert", "transformers", "x transformers"], rows)


# === Fine-tuning ===


def hf_finetune_worker(train_examples, recipe):
    """A transformers training loop with `DataCollatorWithPadding`."""
    import numpy as np
    import torch
    import transformers

    from kbert.finetuning.sentiment_demo import sentiment_splits
    from kbert.sources import resolve_preset

    torch.manual_seed(recipe.seed)
    splits = sentiment_splits(train_examples, seed=SPLIT_SEED)
    directory = resolve_preset(recipe.preset)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    collate = transformers.DataCollatorWithPadding(tokenizer, return_tensors="pt")
    model = transformers.BertForSequenceClassification.from_pretrained(
        directory, num_labels=2
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
    start = time.perf_counter()
    encoded = tokenizer(texts, truncation=True, max_length=recipe.sequence_length)
    model.train()
    for epoch in range(recipe.epochs):
        order = recipe.epoch_order(len(texts), epoch)
        for first in range(0, len(order), recipe.batch_size):
            index = order[first : first + recipe.batch_size]
            batch = collate(
                [
                    {"input_ids": encoded["input_ids"][i], "labels": int(labels[i])}
                    for i in index
                ]
            )
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    seconds = time.perf_counter() - start
    model.eval()
    test_texts, test_labels = splits["test"]
    predictions = []
    with torch.inference_mode():
        for first in range(0, len(test_texts), 64):
            batch = tokenizer(
                test_texts[first : first + 64],
                padding=True,
                truncation=True,
                max_length=recipe.sequence_length,
                return_tensors="pt",
            )
            predictions.append(model(**batch).logits.argmax(-1).numpy())
    accuracy = float(np.mean(np.concatenate(predictions) == np.asarray(test_labels)))
    return {
        "accuracy": accuracy,
        "examples_per_second": recipe.epochs * len(texts) / seconds,
    }


def kbert_finetune_worker(train_examples, recipe):
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


def report_finetune(results, seeds, train_examples):
    import numpy as np

    from kbert.finetuning.sentiment_demo import DEMO_RECIPE

    hf = results["transformers (torch, DataCollatorWithPadding)"]
    hf_accuracy = np.mean([r["accuracy"] for r in hf])
    # Speed: the median over seeds (a run slowed by other jobs does not move it).
    hf_speed = np.median([r["examples_per_second"] for r in hf])
    rows = []
    for name, runs in results.items():
        accuracy = np.array([r["accuracy"] for r in runs])
        speed = np.median([r["examples_per_second"] for r in runs])
        rows.append(
            [
                name,
                f"{accuracy.mean():.4f} ± {accuracy.std():.4f}",
                f"{100 * (accuracy.mean() - hf_accuracy):+.2f}",
                f"{speed:.1f}",
                f"{speed / hf_speed:.2f}",
            ]
        )
    print(
        f"\n## fine-tuning on raw strings: {DEMO_RECIPE}; {train_examples} training "
        f"reviews; training seeds {seeds} (accuracy mean ± std, examples/s median)"
    )
    print_table(["run", "test accuracy", "points vs HF", "train examples/s", "x HF"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--texts", type=int, default=2000, help="reviews to run")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per system")
    parser.add_argument("--finetune", action="store_true")
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker == "inference":
        return inference_worker(args.texts, args.rounds)
    if args.worker in ("hf", "kbert"):
        from kbert.finetuning.recipe import FinetuneRecipe
        from kbert.finetuning.sentiment_demo import DEMO_RECIPE

        recipe = FinetuneRecipe(**{**vars(DEMO_RECIPE), "seed": args.seeds[0]})
        worker = hf_finetune_worker if args.worker == "hf" else kbert_finetune_worker
        print(json.dumps(worker(args.train_examples, recipe)))
        return None

    print(f"CPU: {cpu_description()}", flush=True)
    if not args.finetune:
        results = {}
        for backend in args.backends:
            results[backend] = run_worker(
                __file__,
                [
                    "--worker",
                    "inference",
                    "--texts",
                    str(args.texts),
                    "--rounds",
                    str(args.rounds),
                ],
                backend,
            )
            print(f"{backend}: {json.dumps(results[backend])}", flush=True)
        report_inference(results)
        return None
    runs = {"transformers (torch, DataCollatorWithPadding)": ("hf", "torch")}
    runs.update({f"kbert ({backend})": ("kbert", backend) for backend in args.backends})
    results = {name: [] for name in runs}
    for seed in args.seeds:
        for name, (worker, backend) in runs.items():
            result = run_worker(
                __file__,
                [
                    "--worker",
                    worker,
                    "--seeds",
                    str(seed),
                    "--train-examples",
                    str(args.train_examples),
                ],
                backend,
            )
            print(f"seed {seed}, {name}: {json.dumps(result)}", flush=True)
            results[name].append(result)
    report_finetune(results, args.seeds, args.train_examples)
    return None


if __name__ == "__main__":
    main()
