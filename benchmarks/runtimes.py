"""One classifier on every runtime kbert exports to: strings -> predictions.

The model: the demo's classifier (all-MiniLM-L6-v2 fine-tuned on Rotten
Tomatoes with `examples/demo.py`'s recipe, one epoch on JAX; cached in the
work directory). It is exported with `kbert.export` to a SavedModel, every
TFLite flavour and quantization, ONNX from each backend and ONNX
`dynamic_int8`, and each artifact is measured against Keras with
`kbert verify` (ONNX files on onnxruntime and OpenVINO).

Then, in one process, each system classifies the 1,281 held-out test
reviews, strings in, predicted classes out, as its users run it:

- Keras: `model.predict(texts, batch_size=32)` (kbert's own raw-string path);
- onnxruntime (float32, dynamic_int8) and OpenVINO (its default precision,
  float32 forced, and the dynamic_int8 file): Hugging Face `tokenizers` with
  the model's vocabulary, reviews sorted by token length, batches of 32
  padded to the batch's longest review;
- LiteRT `token_ids` files (batch 1, dynamic length, as apps run them): the
  same tokenizer, one review at a time at its own length;
- LiteRT `string` files and the SavedModel's text signature: the texts in
  batches of 32 (same order), the tokenizer inside the artifact.

Every runtime gets 2 threads where it has the setting. Systems run in turn
(rotating order) for `--rounds` rounds after a warm-up pass; the table gives
each one's median, its speed relative to Keras `predict` and its argmax
agreement with it. Ratios are from one run on the CPU printed at the top.

    python benchmarks/runtimes.py --workdir /tmp/kbert-runtimes        # ~1 hour on 2 cores
    python benchmarks/runtimes.py --workdir /tmp/kbert-runtimes --skip-export
"""

import argparse
import json
import os
import time

from common import finetune_demo_classifier, print_table, run_worker
from end_to_end import cpu_description

BATCH = 32
THREADS = 2
TFLITE = [
    ("string", None),
    ("string", "dynamic_int8"),
    ("token_ids", None),
    ("token_ids", "float16"),
    ("token_ids", "dynamic_int8"),
    ("token_ids", "int8"),
    ("mediapipe", None),
    ("mediapipe", "dynamic_int8"),
]
BACKENDS = ("tensorflow", "jax", "torch")


def artifact_paths(workdir):
    paths = {"saved_model": os.path.join(workdir, "saved_model")}
    for flavour, quantization in TFLITE:
        name = f"{flavour}_{quantization or 'float32'}"
        paths[f"tflite {name}"] = os.path.join(workdir, f"classifier_{name}.tflite")
    for backend in BACKENDS:
        paths[f"onnx {backend}"] = os.path.join(workdir, f"classifier_{backend}.onnx")
    paths["onnx dynamic_int8"] = os.path.join(workdir, "classifier_torch_dynamic_int8.onnx")
    return paths


# --- workers (one process each) ------------------------------------------------


def export_all(workdir, backend):
    """Exports every artifact this backend makes (TF: SavedModel and TFLite)."""
    import kbert.export as export
    from kbert.presets.model_source import load_model

    preset = os.path.join(workdir, "classifier")
    model = load_model(preset)
    paths = artifact_paths(workdir)
    done = {}
    if backend == "tensorflow":
        if not os.path.exists(paths["saved_model"]):
            export.saved_model(model, paths["saved_model"], source=preset)
        done["saved_model"] = "ok"
        for flavour, quantization in TFLITE:
            key = f"tflite {flavour}_{quantization or 'float32'}"
            if os.path.exists(paths[key]):
                continue
            options = dict(flavour=flavour, quantization=quantization, source=preset)
            if quantization == "int8":
                # Full int8 is far from float32 on MiniLM: accept it knowingly,
                # so that `kbert verify` can show how far.
                options.update(tolerance=3.0, min_agreement=0.0)
            record = export.tflite(model, paths[key], **options)
            done[key] = record["verification"].get("agreement", {}).get("value")
    key = f"onnx {backend}"
    if not os.path.exists(paths[key]):
        export.onnx(model, paths[key], source=preset)
    if backend == "torch" and not os.path.exists(paths["onnx dynamic_int8"]):
        record = export.onnx(
            model, paths["onnx dynamic_int8"], source=preset, quantization="dynamic_int8"
        )
        done["onnx dynamic_int8"] = record["quantized"]["agreement"]["value"]
    return done


def verify_all(workdir):
    from kbert.export.measurements import (
        artifact_row,
        artifact_runtimes,
        keras_row,
        measurement_table,
    )
    from kbert.presets.model_source import load_model

    model = load_model(os.path.join(workdir, "classifier"))
    rows = [keras_row(model, num_examples=200, repeats=5)]
    for path in artifact_paths(workdir).values():
        for runtime in artifact_runtimes(path):
            rows.append(
                artifact_row(path, model, num_examples=200, repeats=5, runtime=runtime)
            )
    return {"table": measurement_table(rows)}


def _tokenizer(preset, length):
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(os.path.join(preset, "vocab.txt"), lowercase=True)
    tokenizer.enable_truncation(max_length=length)
    return tokenizer


def _padded(encodings):
    import numpy as np

    longest = max(len(e.ids) for e in encodings)
    batch = {
        name: np.zeros((len(encodings), longest), "int32")
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        batch["token_ids"][row, :size] = encoding.ids
        batch["segment_ids"][row, :size] = encoding.type_ids
        batch["padding_mask"][row, :size] = 1
    return batch


def _sorted_batches(tokenizer, run, texts):
    """Tokenize, sort by length, run batches of 32, return logits in order."""
    import numpy as np

    encodings = tokenizer.encode_batch(texts)
    order = np.argsort([len(e.ids) for e in encodings], kind="stable")
    logits = np.zeros((len(texts), 2), "float32")
    for start in range(0, len(order), BATCH):
        rows = order[start : start + BATCH]
        logits[rows] = run(_padded([encodings[i] for i in rows]))
    return logits


def _one_at_a_time(tokenizer, run, texts):
    import numpy as np

    return np.concatenate([run(_padded([e])) for e in tokenizer.encode_batch(texts)])


def _text_batches(run, texts):
    import numpy as np

    return np.concatenate(
        [run(np.array(texts[s : s + BATCH], object)) for s in range(0, len(texts), BATCH)]
    )


def systems(workdir, model):
    """`{name: function(texts) -> logits}` for every runtime, loaded."""
    import keras
    import numpy as np
    import tensorflow as tf

    from kbert.export.onnx.runner import OnnxRunner
    from kbert.export.openvino.runner import OpenVinoRunner
    from kbert.export.tflite.runner import TFLiteRunner

    preset = os.path.join(workdir, "classifier")
    paths = artifact_paths(workdir)
    tokenizer = _tokenizer(preset, model.preprocessor.sequence_length)
    found = {
        f"Keras predict ({keras.backend.backend()})": lambda texts: model.predict(
            texts, batch_size=BATCH, verbose=0
        )
    }

    def logits_of(runner):
        return lambda batch: runner(batch)["logits"]

    onnx = {
        "onnxruntime float32": OnnxRunner(paths["onnx torch"], num_threads=THREADS),
        "onnxruntime dynamic_int8": OnnxRunner(
            paths["onnx dynamic_int8"], num_threads=THREADS
        ),
    }
    for label, path in (
        ("", paths["onnx torch"]),
        (" dynamic_int8", paths["onnx dynamic_int8"]),
    ):
        default = OpenVinoRunner(path, num_threads=THREADS)
        onnx[f"OpenVINO{label} ({default.precision}, its default)"] = default
        if not label:
            onnx["OpenVINO (f32 forced)"] = OpenVinoRunner(path, "f32", THREADS)
    for name, runner in onnx.items():
        found[name] = lambda texts, r=runner: _sorted_batches(
            tokenizer, logits_of(r), texts
        )
    for quantization in ("float32", "dynamic_int8"):
        runner = TFLiteRunner(
            paths[f"tflite token_ids_{quantization}"], num_threads=THREADS
        )
        found[f"LiteRT token_ids {quantization} (batch 1)"] = lambda texts, r=runner: (
            _one_at_a_time(tokenizer, logits_of(r), texts)
        )
    for quantization in ("float32", "dynamic_int8"):
        runner = TFLiteRunner(paths[f"tflite string_{quantization}"], num_threads=THREADS)
        found[f"LiteRT string {quantization} (tokenizer inside)"] = lambda texts, r=runner: (
            _text_batches(lambda b: r({"text": b})["logits"], texts)
        )
    import tensorflow_text  # noqa: F401 - the SavedModel's tokenizer ops

    signature = tf.saved_model.load(paths["saved_model"]).signatures["serving_default"]
    found["SavedModel text signature (TensorFlow)"] = lambda texts: _text_batches(
        lambda b: signature(text=tf.constant(list(b)))["logits"].numpy(), texts
    )
    return {name: (lambda texts, f=f: np.asarray(f(texts))) for name, f in found.items()}


def throughput(workdir, rounds):
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.presets.model_source import load_model

    model = load_model(os.path.join(workdir, "classifier"))
    texts, labels = rotten_tomatoes_split(seed=0)["test"]
    runs = systems(workdir, model)
    names = list(runs)
    predictions = {name: np.argmax(runs[name](texts), -1) for name in names}  # warm-up
    seconds = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            runs[name](texts)
            seconds[name].append(time.perf_counter() - start)
    keras_name = names[0]
    return {
        "reviews": len(texts),
        "rows": {
            name: {
                "seconds": float(np.median(seconds[name])),
                "all_seconds": seconds[name],
                "agreement": float(np.mean(predictions[name] == predictions[keras_name])),
                "accuracy": float(np.mean(predictions[name] == np.asarray(labels))),
            }
            for name in names
        },
    }


def worker(args):
    if args.worker == "finetune":
        preset = os.path.join(args.workdir, "classifier")
        result = {"preset": preset, "cached": True}
        if not os.path.isdir(preset):
            result = finetune_demo_classifier(preset, args.train_examples)
    elif args.worker == "export":
        result = export_all(args.workdir, args.backend)
    elif args.worker == "verify":
        result = verify_all(args.workdir)
    else:
        result = throughput(args.workdir, args.rounds)
    print(json.dumps(result))


# --- driver -------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=os.path.join("/tmp", "kbert-runtimes"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument(
        "--keras-backend", default="jax", help="backend of the Keras predict row (jax)"
    )
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    os.makedirs(args.workdir, exist_ok=True)
    script = os.path.abspath(__file__)
    common = ["--workdir", args.workdir, "--train-examples", str(args.train_examples)]
    print(f"CPU: {cpu_description()}")
    if not args.skip_export:
        print(run_worker(script, ["--worker", "finetune", *common], "jax"))
        for backend in BACKENDS:
            print(
                run_worker(
                    script, ["--worker", "export", "--backend", backend, *common], backend
                )
            )
        print(run_worker(script, ["--worker", "verify", *common], "tensorflow")["table"])
    result = run_worker(
        script,
        ["--worker", "time", "--rounds", str(args.rounds), *common],
        args.keras_backend,
    )
    rows = result["rows"]
    base = next(iter(rows.values()))["seconds"]
    table = [
        [
            name,
            f"{result['reviews'] / row['seconds']:.1f}",
            f"{base / row['seconds']:.2f}x",
            f"{row['agreement']:.4f}",
            f"{row['accuracy']:.4f}",
        ]
        for name, row in rows.items()
    ]
    print(
        f"\n{result['reviews']} held-out reviews, strings -> predicted classes, "
        f"median of {args.rounds} rounds (systems in turn); ratios and agreement "
        "against Keras predict"
    )
    print_table(["system", "reviews/s", "vs Keras", "agreement", "accuracy"], table)
    print(json.dumps({name: row["all_seconds"] for name, row in rows.items()}))


if __name__ == "__main__":
    main()
