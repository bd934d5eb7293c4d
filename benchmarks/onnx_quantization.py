"""ONNX quantization choices for BERT: agreement with Keras and speed on onnxruntime.

The model is the demo's: all-MiniLM-L6-v2 fine-tuned on Rotten Tomatoes as
`examples/demo.py` does (its recipe, one epoch on JAX; the preset is cached
in the work directory). It is exported to float32 ONNX (`kbert.export.onnx`
on `--backend`), then quantized with each recipe of
`kbert.export.onnx.quantization.QuantizationRecipe` below (every field is an
`onnxruntime.quantization` option; calibration and outlier channels use 256
Rotten Tomatoes training reviews). Each file classifies the 1,281 held-out
test reviews:

- agreement: same argmax as kbert's Keras `model.predict(texts, batch_size=32)`;
- throughput: onnxruntime CPU, 2 intra-op threads (spinning off, so that
  interleaved sessions do not steal each other's cores), length-sorted
  batches of 32 padded to the batch's longest review (the model's
  tokenization done once beforehand: the same for every row). Every batch
  runs on every file in turn (rotating order), `--rounds` times; a file's
  time is the sum over batches of its median; ratios are against float32.

    python benchmarks/onnx_quantization.py --workdir /tmp/kbert-quantization
    python benchmarks/onnx_quantization.py --workdir /tmp/kbert-probe \
        --model linear_probe --rounds 0 --other-backends ''   # a weak head
"""

import argparse
import json
import os
import shutil
import time

from common import finetune_demo_classifier, linear_probe_classifier, run_worker
from end_to_end import cpu_description

THREADS = 2
BATCH = 32


def recipes():
    from kbert.export.onnx.quantization import RECIPES, QuantizationRecipe, recipe_for

    plain = dict(outlier_ratio=None, float_head=False)
    return [
        ("float32 (kbert.export.onnx)", None),
        ("float16: convert_float_to_float16", RECIPES["float16"]),
        (
            "quantize_dynamic, defaults (every op type, per-tensor)",
            QuantizationRecipe("dynamic", op_types=None, per_channel=False, **plain),
        ),
        (
            "dynamic, MatMul only, per-tensor weights",
            QuantizationRecipe("dynamic", per_channel=False, **plain),
        ),
        ("dynamic, MatMul only, per-channel", QuantizationRecipe("dynamic", **plain)),
        (
            "dynamic, per-channel, reduce_range",
            QuantizationRecipe("dynamic", reduce_range=True, **plain),
        ),
        (
            "dynamic, per-channel, uint8 weights (U8U8)",
            QuantizationRecipe("dynamic", weight_type="uint8", **plain),
        ),
        (
            "dynamic, per-channel, head float32",
            QuantizationRecipe("dynamic", outlier_ratio=None),
        ),
        (
            "dynamic, per-channel, head + outlier channels (>6x median, <=8) float32",
            QuantizationRecipe("dynamic", outlier_ratio=6.0, max_outlier_channels=8),
        ),
        (
            "dynamic, per-channel, head + outlier channels (>8x median, <=32) float32",
            QuantizationRecipe("dynamic", outlier_ratio=8.0),
        ),
        (
            "dynamic, per-channel, head + outlier channels (>3x, <=32) float32",
            QuantizationRecipe("dynamic", outlier_ratio=3.0),
        ),
        (
            "dynamic_int8: per-channel, head + outlier channels float32 where needed "
            "(ratio searched)",
            recipe_for("dynamic_int8"),  # what kbert writes on this CPU
        ),
        (
            "outlier channels (>3x) float32, embeddings int8 (Gather)",
            QuantizationRecipe("dynamic", op_types=("MatMul", "Gather")),
        ),
        (
            "static QDQ, MinMax, per-channel, MatMul only",
            QuantizationRecipe("static", calibration="minmax", **plain),
        ),
        (
            "static QDQ, percentile 99.999",
            QuantizationRecipe("static", calibration="percentile", **plain),
        ),
        (
            "static QDQ, percentile 99.999, reduce_range",
            QuantizationRecipe(
                "static", calibration="percentile", reduce_range=True, **plain
            ),
        ),
        (
            "static QDQ, percentile 99.999, uint8 weights (U8U8)",
            QuantizationRecipe(
                "static", calibration="percentile", weight_type="uint8", **plain
            ),
        ),
        (
            "static QDQ, percentile, without quant_pre_process",
            QuantizationRecipe("static", preprocess=False, **plain),
        ),
        (
            "static QDQ, entropy",
            QuantizationRecipe("static", calibration="entropy", **plain),
        ),
        (
            "static QOperator, MinMax",
            QuantizationRecipe(
                "static", calibration="minmax", quant_format="qoperator", **plain
            ),
        ),
        (
            "int8: static QDQ, percentile, head + outlier channels float32",
            recipe_for("int8"),
        ),
        (
            "MatMulNBits 8-bit, blocks of 32, int8 compute",
            QuantizationRecipe("blockwise", block_size=32),
        ),
        (
            "MatMulNBits 8-bit, blocks of 128, int8 compute",
            QuantizationRecipe("blockwise", block_size=128),
        ),
    ]


def export_float(workdir, backend):
    import kbert.export as export
    from kbert.presets.model_source import load_model

    preset = os.path.join(workdir, "classifier")
    path = os.path.join(workdir, f"float32_{backend}.onnx")
    if not os.path.exists(path):
        export.onnx(load_model(preset), path, source=preset)
    return {"path": path}


def sessions_for(paths):
    import onnxruntime

    sessions = {}
    for name, path in paths.items():
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sessions[name] = onnxruntime.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )
    return sessions


def measure(workdir, backend, rounds, other_backends):
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.export.agreement import length_batches
    from kbert.export.onnx.quantization import (
        calibration_feeds,
        quantize_and_verify,
        quantize_onnx,
    )
    from kbert.export.spec import export_spec
    from kbert.presets.model_source import load_model

    preset = os.path.join(workdir, "classifier")
    model = load_model(preset)
    spec = export_spec(model)
    texts, labels = rotten_tomatoes_split(seed=0)["test"]
    labels = np.asarray(labels)
    reference = np.argmax(model.predict(texts, batch_size=BATCH, verbose=0), -1)
    features = {
        k: np.asarray(v)
        for k, v in model.preprocessor(texts).items()
        if k in spec.token_inputs
    }
    batches = list(length_batches(features, BATCH))
    feeds = calibration_feeds(model, spec)
    float_path = os.path.join(workdir, f"float32_{backend}.onnx")
    paths, notes = {}, {}
    for number, (name, recipe) in enumerate(recipes()):
        if recipe is None:
            paths[name] = float_path
            continue
        path = os.path.join(workdir, f"{backend}_{number:02d}.onnx")
        start = time.perf_counter()
        if len(recipe.candidates()) > 1:  # the exporter's search, its checks included
            shutil.copy(float_path, path)
            notes[name] = quantize_and_verify(model, spec, path, recipe, 0.99)
        else:
            notes[name] = quantize_onnx(float_path, path, recipe, feeds)
        notes[name]["quantize_seconds"] = round(time.perf_counter() - start, 1)
        paths[name] = path
    sessions = sessions_for(paths)
    rows = {}
    for name, session in sessions.items():
        logits = np.zeros((len(texts), 2), "float32")
        for index, batch in batches:
            logits[index] = session.run(["logits"], batch)[0]
        predicted = np.argmax(logits, -1)
        rows[name] = {
            "agreement": float(np.mean(predicted == reference)),
            "accuracy": float(np.mean(predicted == labels)),
            "size_mb": os.path.getsize(paths[name]) / 1e6,
        }
    names = list(sessions)
    seconds = {name: np.zeros((rounds, len(batches))) for name in names}
    for round_ in range(rounds):
        for number, (_, batch) in enumerate(batches):
            shift = (number + round_) % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                sessions[name].run(["logits"], batch)
                seconds[name][round_, number] = time.perf_counter() - start
    for name in names:
        rows[name]["seconds"] = (
            float(np.median(seconds[name], axis=0).sum()) if rounds else float("nan")
        )
    across = {}
    for other in other_backends:
        path = os.path.join(workdir, f"float32_{other}.onnx")
        quantized = os.path.join(workdir, f"{other}_dynamic_int8.onnx")
        shutil.copy(path, quantized)
        quantize_and_verify(model, spec, quantized, "dynamic_int8", 0.99)
        session = sessions_for({other: quantized})[other]
        predicted = np.zeros(len(texts), "int64")
        for index, batch in batches:
            predicted[index] = np.argmax(session.run(["logits"], batch)[0], -1)
        across[other] = float(np.mean(predicted == reference))
    return {
        "rows": rows,
        "notes": notes,
        "reviews": len(texts),
        "keras_accuracy": float(np.mean(reference == labels)),
        "across_backends": across,
    }


def worker(args):
    if args.worker == "finetune":
        preset = os.path.join(args.workdir, "classifier")
        result = {"preset": preset, "cached": True}
        if not os.path.isdir(preset) and args.model == "linear_probe":
            result = linear_probe_classifier(preset)
        elif not os.path.isdir(preset):
            result = finetune_demo_classifier(preset, args.train_examples)
    elif args.worker == "export":
        result = export_float(args.workdir, args.backend)
    else:
        result = measure(
            args.workdir,
            args.backend,
            args.rounds,
            [b for b in args.other_backends.split(",") if b],
        )
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="/tmp/kbert-quantization")
    parser.add_argument("--backend", default="torch", help="exporter of the float32 file")
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds (0: agreement only)"
    )
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument(
        "--model",
        choices=("finetuned", "linear_probe"),
        default="finetuned",
        help="the demo's fine-tune, or a linear probe on frozen MiniLM (a weak head)",
    )
    parser.add_argument(
        "--other-backends",
        default="tensorflow,jax",
        help="also export from these and measure dynamic_int8's agreement ('' for none)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    os.makedirs(args.workdir, exist_ok=True)
    script = os.path.abspath(__file__)
    common = ["--workdir", args.workdir, "--train-examples", str(args.train_examples)]
    common += ["--model", args.model]
    print(f"CPU: {cpu_description()}")
    print(run_worker(script, ["--worker", "finetune", *common], "jax"))
    others = [b for b in args.other_backends.split(",") if b]
    for backend in [args.backend, *others]:
        run_worker(script, ["--worker", "export", "--backend", backend, *common], backend)
    result = run_worker(
        script,
        [
            "--worker",
            "measure",
            "--backend",
            args.backend,
            "--rounds",
            str(args.rounds),
            "--other-backends",
            ",".join(others),
            *common,
        ],
        "tensorflow",
    )
    rows = result["rows"]
    base = rows["float32 (kbert.export.onnx)"]["seconds"]
    print(
        f"\nMiniLM-L6 review classifier (Keras accuracy {result['keras_accuracy']:.3f}), "
        f"{result['reviews']} held-out reviews, ONNX exported on {args.backend}, "
        f"onnxruntime {THREADS} threads, batches of {BATCH} with dynamic padding, "
        f"median of {args.rounds} interleaved rounds\n"
    )
    header = ["recipe", "agreement", "accuracy", "size MB", "reviews/s", "vs float32"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['agreement']:.4f} | {row['accuracy']:.4f} | "
            f"{row['size_mb']:.1f} | {result['reviews'] / row['seconds']:.1f} | "
            f"{base / row['seconds']:.2f}x |"
        )
    print("\n".join(lines))
    for backend, value in result["across_backends"].items():
        print(f"dynamic_int8 from the {backend} export: agreement {value:.4f}")
    print(json.dumps(result["notes"], indent=1))


if __name__ == "__main__":
    main()
