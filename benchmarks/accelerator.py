"""Speed on an accelerator: the matmul limit, a bert-base kbert backbone and
transformers' BertModel, on the Keras backend this process runs (torch or jax).

Run once per backend, each in its own process (the backend is fixed at
import):

    KERAS_BACKEND=torch python benchmarks/accelerator.py --out torch.json
    KERAS_BACKEND=jax python benchmarks/accelerator.py --out jax.json
    KERAS_BACKEND=torch python benchmarks/accelerator.py --tiny   # CPU check

Measures, on whatever device the backend uses (a GPU where there is one):

- the hardware's limit: 2048 x 2048 and 4096 x 4096 matmuls through
  `keras.ops.matmul` (under `jax.jit` on JAX, eager on torch) in bfloat16 and
  in float32 three ways: the backend's default, strict IEEE float32
  (torch `set_float32_matmul_precision("highest")`, JAX precision
  "float32") and TF32 allowed (torch "high", JAX "tensorfloat32");
- a bert-base-shaped `BertBackbone` (random weights, 12 layers, hidden 768,
  12 heads, intermediate 3072, vocabulary 30522) at batch 64 x sequence 128:
  inference forward in float32 (the backend's default float32 matmul
  precision, recorded in each line) and in `mixed_bfloat16`, compiled as
  kbert runs it (`jax.jit` of `stateless_call`; torch eager with autograd
  off, kbert's inference path there); and one training step of a
  `BertClassifier` on it in `mixed_bfloat16` (`train_on_batch`, kbert's
  default optimizer and `jit_compile`, dropout 0.1, which on kbert also
  turns attention probabilities on while training);
- on torch only, the peer: transformers' `BertModel` (same config, random
  init, SDPA attention) forward in float32 and under bf16 autocast.

Each figure is the median of `--repeats` timed samples after warm-up (the
compilation); a sample runs `--inner` calls and synchronizes the device
(`torch.cuda.synchronize`, `jax.block_until_ready`) before the clock is read.

Model FLOPs (MFU), counted per forward pass of B sequences of S tokens:

    2 * N * B * S  +  4 * L * B * S^2 * H

N is the parameter count of the L transformer layers (embeddings, the pooler
and the head left out; H the hidden size): a multiply-add per weight per
token, and attention's Q K^T and A V. A training step counts 3x the
forward. MFU is that over the measured time, against two ceilings: the
bfloat16 4096 x 4096 matmul measured here on the same backend, and the
H100 SXM's dense bf16 peak, 989 TFLOP/s.

Prints one JSON line per measurement, a table last, and writes all lines
to `--out`.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, time_call  # noqa: E402
from encoder import SHAPES, VOCABULARY_SIZE, inputs  # noqa: E402

H100_BF16_PEAK = 989e12
FULL = dict(shape=SHAPES["bert_base"], vocabulary=VOCABULARY_SIZE, batch=64, length=128)
TINY = dict(
    shape=dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256),
    vocabulary=VOCABULARY_SIZE,
    batch=4,
    length=32,
)


class Device:
    """The backend's device: its name, how to wait for it, how to put an
    array on it, and the float32 matmul precision switch."""

    def __init__(self):
        import keras

        self.backend = keras.backend.backend()
        if self.backend == "torch":
            import torch

            self.torch = torch
            self.cuda = torch.cuda.is_available()
            self.name = torch.cuda.get_device_name() if self.cuda else "CPU"
            self.default_float32 = f"torch {torch.get_float32_matmul_precision()}"
        elif self.backend == "jax":
            import jax

            self.jax = jax
            self.name = jax.devices()[0].device_kind
            precision = jax.config.jax_default_matmul_precision
            self.default_float32 = f"jax {precision or 'default'}"
        else:
            raise SystemExit("Run with KERAS_BACKEND=torch or KERAS_BACKEND=jax.")

    def sync(self, out):
        if self.backend == "jax":
            self.jax.block_until_ready(out)
        elif self.cuda:
            self.torch.cuda.synchronize()

    def put(self, array):
        import keras

        return keras.ops.convert_to_tensor(array)

    def float32_precision(self, mode):
        """A context manager: mode "strict" (IEEE float32), "tf32" or None
        (the backend's default)."""
        import contextlib

        if mode is None:
            return contextlib.nullcontext()
        if self.backend == "jax":
            return self.jax.default_matmul_precision(
                {"strict": "float32", "tf32": "tensorfloat32"}[mode]
            )
        torch = self.torch

        @contextlib.contextmanager
        def setting():
            before = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision({"strict": "highest", "tf32": "high"}[mode])
            try:
                yield
            finally:
                torch.set_float32_matmul_precision(before)

        return setting()


def seconds(device, function, args):
    """Median seconds per call of `function()` (see the module docstring)."""

    def sample():
        out = None
        for _ in range(args.inner):
            out = function()
        device.sync(out)

    return time_call(sample, args.repeats, warmup=args.warmup) / args.inner


def matmul_records(device, args, sizes):
    import keras
    import numpy as np

    variants = [
        ("float32", None),
        ("float32", "strict"),
        ("float32", "tf32"),
        ("bfloat16", None),
    ]
    rng = np.random.default_rng(0)
    records = []
    for size in sizes:
        a, b = (rng.standard_normal((size, size), dtype="float32") for _ in range(2))
        for dtype, mode in variants:
            x, y = (keras.ops.cast(device.put(m), dtype) for m in (a, b))
            with device.float32_precision(mode):
                matmul = keras.ops.matmul
                if device.backend == "jax":
                    matmul = device.jax.jit(keras.ops.matmul)  # traced in the context
                s = seconds(device, lambda m=matmul, x=x, y=y: m(x, y), args)
            label = dtype if dtype == "bfloat16" else f"float32 {mode or 'default'}"
            records.append(
                {
                    "measurement": "matmul",
                    "size": size,
                    "dtype": label,
                    "ms": 1000 * s,
                    "tflops": 2 * size**3 / s / 1e12,
                }
            )
    return records


def forward_flops(config, batch, length):
    """The module docstring's count for one forward pass."""
    layers, hidden = config["num_layers"], config["hidden_dim"]
    intermediate = config["intermediate_dim"]
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden * intermediate
    per_layer += intermediate + hidden + 4 * hidden  # biases, two layer norms
    weights = layers * per_layer
    return 2 * weights * batch * length + 4 * layers * batch * length**2 * hidden, weights


def layer_parameters(backbone):
    """The transformer layers' parameters as the model holds them."""
    import math

    return sum(
        math.prod(v.shape) for layer in backbone.transformer_layers for v in layer.weights
    )


def model_record(name, dtype, s, flops, tokens, bf16_limit, extra=None):
    record = {
        "measurement": name,
        "dtype": dtype,
        "ms": 1000 * s,
        "tokens_per_s": tokens / s,
        "tflops": flops / s / 1e12,
        "mfu_vs_measured_bf16_matmul": flops / s / bf16_limit,
        "mfu_vs_h100_bf16_peak": flops / s / H100_BF16_PEAK,
    }
    record.update(extra or {})
    return record


def kbert_records(device, args, config, bf16_limit):
    import keras
    import numpy as np

    from kbert.models.backbone import BertBackbone
    from kbert.models.classifier import BertClassifier

    shape, batch, length = config["shape"], config["batch"], config["length"]
    flops, weights = forward_flops(shape, batch, length)
    tokens = batch * length
    x = {k: device.put(v) for k, v in inputs(batch, length).items()}
    records = []
    for dtype in ("float32", "mixed_bfloat16"):
        keras.utils.set_random_seed(0)
        backbone = BertBackbone(vocabulary_size=config["vocabulary"], dtype=dtype, **shape)
        held = layer_parameters(backbone)  # recorded: should equal `weights`
        forward = forward_function(device, backbone)
        start = time.perf_counter()
        device.sync(forward(x))
        first = time.perf_counter() - start
        s = seconds(device, lambda f=forward: f(x), args)
        precision = {"float32_matmul": device.default_float32} if dtype == "float32" else {}
        records.append(
            model_record(
                "kbert forward",
                dtype,
                s,
                flops,
                tokens,
                bf16_limit,
                {
                    "first_call_s": first,
                    "layer_parameters": weights,
                    "layer_parameters_held": held,
                    **precision,
                },
            )
        )
        del backbone, forward
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(
        vocabulary_size=config["vocabulary"], dtype="mixed_bfloat16", **shape
    )
    model = BertClassifier(backbone, num_classes=2)
    labels = device.put(np.random.default_rng(0).integers(0, 2, batch).astype("int32"))

    def step():
        return model.train_on_batch(x, labels)  # returns numbers: waits

    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    inner = args.inner
    args.inner = 1  # each step already waits for the device
    s = seconds(device, step, args)
    args.inner = inner
    records.append(
        model_record(
            "kbert train step",
            "mixed_bfloat16",
            s,
            3 * flops,
            tokens,
            bf16_limit,
            {
                "first_call_s": first,
                "jit_compile": model.jit_compile,
                "optimizer": type(model.optimizer).__name__,
            },
        )
    )
    return records


def forward_function(device, model):
    """Inference as kbert runs it on the backend: `jax.jit` of the stateless
    call on JAX, the model under `torch.no_grad` on torch."""
    if device.backend == "jax":
        jax = device.jax
        fn = jax.jit(lambda tv, ntv, x: model.stateless_call(tv, ntv, x, training=False)[0])
        tv = [v.value for v in model.trainable_variables]
        ntv = [v.value for v in model.non_trainable_variables]
        return lambda x: fn(tv, ntv, x)
    torch = device.torch

    def run(x):
        with torch.no_grad():
            return model(x, training=False)

    return run


def transformers_records(device, args, config, bf16_limit):
    import contextlib

    import torch
    import transformers

    shape, batch, length = config["shape"], config["batch"], config["length"]
    flops, _ = forward_flops(shape, batch, length)
    where = "cuda" if device.cuda else "cpu"
    torch.manual_seed(0)
    model = (
        transformers.BertModel(
            transformers.BertConfig(
                vocab_size=config["vocabulary"],
                num_hidden_layers=shape["num_layers"],
                num_attention_heads=shape["num_heads"],
                hidden_size=shape["hidden_dim"],
                intermediate_size=shape["intermediate_dim"],
            )
        )
        .eval()
        .to(where)
    )
    x = inputs(batch, length)
    kwargs = dict(
        input_ids=torch.from_numpy(x["token_ids"]).long().to(where),
        token_type_ids=torch.from_numpy(x["segment_ids"]).long().to(where),
        attention_mask=torch.from_numpy(x["padding_mask"]).long().to(where),
    )
    records = []
    for dtype in ("float32", "bf16 autocast"):

        def forward(dtype=dtype):
            autocast = (
                torch.autocast(where, dtype=torch.bfloat16)
                if dtype != "float32"
                else contextlib.nullcontext()
            )
            with torch.no_grad(), autocast:
                return model(**kwargs)

        s = seconds(device, forward, args)
        precision = {"float32_matmul": device.default_float32} if dtype == "float32" else {}
        records.append(
            model_record(
                "transformers BertModel forward",
                dtype,
                s,
                flops,
                batch * length,
                bf16_limit,
                {"attn_implementation": model.config._attn_implementation, **precision},
            )
        )
    return records


def table(records):
    rows = []
    for r in records:
        what = r["measurement"] + (f" {r['size']}^2" if "size" in r else "")
        rows.append(
            [
                what,
                r["dtype"],
                f"{r['ms']:.3f}",
                f"{r['tflops']:.1f}",
                f"{r['tokens_per_s']:,.0f}" if "tokens_per_s" in r else "",
                f"{r['mfu_vs_measured_bf16_matmul']:.1%}" if "tokens_per_s" in r else "",
                f"{r['mfu_vs_h100_bf16_peak']:.1%}" if "tokens_per_s" in r else "",
            ]
        )
    print_table(
        [
            "measurement",
            "dtype",
            "ms",
            "TFLOP/s",
            "tokens/s",
            "MFU (bf16 matmul)",
            "MFU (989)",
        ],
        rows,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON lines here")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes, a CPU check")
    parser.add_argument("--repeats", type=int, default=10, help="timed samples")
    parser.add_argument("--warmup", type=int, default=3, help="samples before timing")
    parser.add_argument("--inner", type=int, default=5, help="calls per sample")
    args = parser.parse_args()
    if args.tiny:
        args.repeats, args.warmup, args.inner = 2, 1, 1
    config = TINY if args.tiny else FULL
    device = Device()
    meta = {"backend": device.backend, "device": device.name}
    records = []

    def emit(new):
        for record in new:
            record = {**meta, **record}
            records.append(record)
            print(json.dumps(record), flush=True)

    emit(matmul_records(device, args, (256,) if args.tiny else (2048, 4096)))
    bf16 = [r for r in records if r["dtype"] == "bfloat16"][-1]["tflops"] * 1e12
    emit(kbert_records(device, args, config, bf16))
    if device.backend == "torch":
        emit(transformers_records(device, args, config, bf16))
    print(
        f"{device.name}, Keras backend {device.backend}; float32 default: "
        f"{device.default_float32}; batch {config['batch']} x {config['length']}"
    )
    table(records)
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main()
