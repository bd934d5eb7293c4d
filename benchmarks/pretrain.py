"""Pretraining speed: kbert `BertPretrainer` on each Keras backend vs Hugging
Face `BertForPreTraining` (PyTorch), the same batch, training tokens per second.

bert-base shape (12 layers, hidden 768, 12 heads, vocabulary 30522) at
sequence length 128, 20 masked predictions per sequence, AdamW with global
norm clipping, dropout on. kbert compiles with XLA on TensorFlow and JAX
(`jit_compile=True`) and runs eagerly on torch (its fastest there); HF runs
eagerly. One process per configuration (the Keras backend is fixed at
import); each reports the median step time after warm-up (compilation).

Note: kbert's MLM head projects only the masked positions onto the
vocabulary; HF's projects every position and masks the loss with -100.

Usage:
    python benchmarks/pretrain.py                # bert-base, a few steps
    python benchmarks/pretrain.py --quick        # tiny shapes, seconds
    python benchmarks/pretrain.py --steps 10 --batch-size 16 --output out.json
"""

import argparse
import json
import os
import subprocess
import sys
import time

BERT_BASE = dict(
    num_layers=12,
    hidden_dim=768,
    num_heads=12,
    intermediate_dim=3072,
    vocabulary_size=30522,
)
QUICK = dict(
    num_layers=2, hidden_dim=128, num_heads=2, intermediate_dim=512, vocabulary_size=1000
)


def make_batch(batch_size, seq_length, predictions, vocabulary_size, seed=0):
    """One pretraining batch as numpy arrays (the same in every worker)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, (batch_size, seq_length)).astype("int32")
    token_ids[:, 0] = 2
    segment_ids = (np.arange(seq_length)[None] >= seq_length // 2).repeat(batch_size, 0)
    positions = np.sort(
        np.stack(
            [
                rng.choice(np.arange(1, seq_length), predictions, replace=False)
                for _ in range(batch_size)
            ]
        ),
        axis=1,
    ).astype("int32")
    labels = np.take_along_axis(token_ids, positions, axis=1)
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids.astype("int32"),
        "padding_mask": np.ones((batch_size, seq_length), "int32"),
        "mask_positions": positions,
        "mask_ids": labels,
        "nsp": rng.integers(0, 2, batch_size).astype("int32"),
    }


def kbert_worker(args, shape):
    import keras
    import numpy as np

    import kbert
    from kbert.optimization.optimizers import bert_optimizer

    batch = make_batch(
        args.batch_size, args.seq_length, args.predictions, shape["vocabulary_size"]
    )
    keras.utils.set_random_seed(0)
    backbone = kbert.BertBackbone(max_sequence_length=max(512, args.seq_length), **shape)
    model = kbert.BertPretrainer(backbone, compile=False)
    jit = keras.backend.backend() in ("tensorflow", "jax")
    model.compile(
        optimizer=bert_optimizer(total_steps=10**6, learning_rate=1e-4, warmup_steps=0),
        jit_compile=jit,
    )
    x = {
        k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")
    }
    y = {"mlm_logits": batch["mask_ids"], "nsp_logits": batch["nsp"]}
    sample_weight = {
        "mlm_logits": np.ones(batch["mask_ids"].shape, "float32"),
        "nsp_logits": np.ones(args.batch_size, "float32"),
    }

    def step():
        logs = model.train_on_batch(x, y, sample_weight, return_dict=True)
        return float(logs["loss"])  # blocks until the step is done

    return measure(step, args), {"jit_compile": jit}


def hf_worker(args, shape):
    import torch
    from transformers import BertConfig, BertForPreTraining

    batch = make_batch(
        args.batch_size, args.seq_length, args.predictions, shape["vocabulary_size"]
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=shape["vocabulary_size"],
        hidden_size=shape["hidden_dim"],
        num_hidden_layers=shape["num_layers"],
        num_attention_heads=shape["num_heads"],
        intermediate_size=shape["intermediate_dim"],
        max_position_embeddings=max(512, args.seq_length),
    )
    model = BertForPreTraining(config).train()
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    decay = [
        p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)
    ]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": 0.01},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=1e-4,
        eps=1e-6,
    )
    labels = torch.full((args.batch_size, args.seq_length), -100, dtype=torch.long)
    positions = torch.from_numpy(batch["mask_positions"]).long()
    labels.scatter_(1, positions, torch.from_numpy(batch["mask_ids"]).long())
    inputs = dict(
        input_ids=torch.from_numpy(batch["token_ids"]).long(),
        token_type_ids=torch.from_numpy(batch["segment_ids"]).long(),
        attention_mask=torch.from_numpy(batch["padding_mask"]).long(),
        labels=labels,
        next_sentence_label=torch.from_numpy(batch["nsp"]).long(),
    )

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss)

    return measure(step, args), {"torch_threads": torch.get_num_threads()}


def measure(step, args):
    start = time.perf_counter()
    for _ in range(args.warmup):
        step()
    warmup_s = time.perf_counter() - start
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    return {
        "warmup_s": round(warmup_s, 2),
        "step_s": median,
        "tokens_per_s": args.batch_size * args.seq_length / median,
    }


def run_worker(name, backend, argv):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if backend:
        env["KERAS_BACKEND"] = backend
    result = subprocess.run(
        [sys.executable, __file__, "--worker", name, *argv],
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        sys.stderr.write(result.stderr[-3000:])
        return {"error": f"exit {result.returncode}"}
    return json.loads(lines[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes")
    parser.add_argument("--steps", type=int, default=3, help="measured steps")
    parser.add_argument("--warmup", type=int, default=2, help="steps before timing")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--output", help="write the results as JSON")
    parser.add_argument("--worker", choices=("kbert", "hf"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    shape = QUICK if args.quick else BERT_BASE

    if args.worker:
        worker = kbert_worker if args.worker == "kbert" else hf_worker
        result, extra = worker(args, shape)
        print(json.dumps({**result, **extra}))
        return 0

    forwarded = [
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--batch-size",
        str(args.batch_size),
        "--seq-length",
        str(args.seq_length),
        "--predictions",
        str(args.predictions),
    ] + (["--quick"] if args.quick else [])
    results = {"shape": shape, "batch_size": args.batch_size, "seq_length": args.seq_length}
    results["hf_torch"] = run_worker("hf", None, forwarded)
    for backend in args.backends:
        results[f"kbert_{backend}"] = run_worker("kbert", backend, forwarded)

    reference = results["hf_torch"].get("tokens_per_s")
    print(
        f"\nPretraining throughput, batch {args.batch_size} x seq {args.seq_length}, "
        f"{'tiny shapes' if args.quick else 'bert-base'} (CPU, {os.cpu_count()} cores)\n"
    )
    print("| run | step (s) | tokens/s | vs HF torch | warm-up (s) |")
    print("|---|---:|---:|---:|---:|")
    for name in ["hf_torch"] + [f"kbert_{b}" for b in args.backends]:
        row = results[name]
        if "error" in row:
            print(f"| {name} | failed: {row['error']} | | | |")
            continue
        ratio = row["tokens_per_s"] / reference if reference else float("nan")
        print(
            f"| {name} | {row['step_s']:.3f} | {row['tokens_per_s']:.0f} | {ratio:.2f}x | {row['warmup_s']:.1f} |"
        )
    if args.output:
        with open(args.output, "w") as file:
            json.dump(results, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
