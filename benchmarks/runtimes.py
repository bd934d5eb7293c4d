"""One classifier on every runtime kbert exports to: latency and throughput.

The model: `all_minilm_l6_v2` (MiniLM-L6: 6 layers, hidden 384, 12 heads)
with a two-class head fitted (logistic regression on the pooled output of
1,500 Rotten Tomatoes training reviews), so that accuracy means something.
It is saved as a kbert preset, exported with `kbert.export` to a SavedModel,
every TFLite flavour and quantization, and ONNX from each backend, and each
artifact is measured against Keras with `kbert verify`.

Then, each in its own process, on the same real reviews packed to 128
tokens: latency (batch 1, ms) and throughput (batch 32, sequences/s) of
Keras on TensorFlow (XLA), JAX (jit) and torch (eager), TF SavedModel
(`tf.saved_model.load`), each TFLite file (`ai_edge_litert`, MediaPipe's
`TextClassifier` for the MediaPipe flavour), ONNX Runtime, and HF
`transformers` `BertForSequenceClassification` (torch eager) loaded from
`kbert.save_hf` of the same model. Ratios are against HF transformers.

    python benchmarks/runtimes.py                    # everything (~15 min on 2 cores)
    python benchmarks/runtimes.py --skip-export      # re-time existing artifacts
"""

import argparse
import json
import os

from common import keras_forward, print_table, run_worker, time_call

SEQUENCE_LENGTH = 128
THROUGHPUT_BATCH = 32
TRAIN_EXAMPLES = 1500
LABELS = {0: "rotten", 1: "fresh"}
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
    return paths


def reviews(count, offset=0):
    from kbert.export.verification_data import verification_texts

    return verification_texts(count, offset)


# --- workers (one process each) ------------------------------------------------


def prepare(workdir):
    """Builds the MiniLM classifier preset with a fitted head (TensorFlow)."""
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.models.classifier import BertClassifier

    preset = os.path.join(workdir, "classifier")
    if os.path.isdir(preset):
        return {"preset": preset, "cached": True}
    model = BertClassifier.from_preset("all_minilm_l6_v2", num_classes=2, id2label=LABELS)
    texts, labels = rotten_tomatoes_split(seed=0)["train"]
    texts, labels = texts[:TRAIN_EXAMPLES], np.array(labels[:TRAIN_EXAMPLES])
    pooled = []
    for start in range(0, len(texts), 64):
        features = model.preprocessor(texts[start : start + 64])
        outputs = model.backbone(features, training=False)
        pooled.append(np.asarray(outputs["pooled_output"]))
    x = np.concatenate(pooled)
    mean, std = x.mean(0), x.std(0) + 1e-6
    z = (x - mean) / std
    weights, bias = np.zeros(x.shape[1]), 0.0
    for _ in range(500):  # logistic regression, L2 0.01, gradient descent
        p = 1 / (1 + np.exp(-(z @ weights + bias)))
        weights -= 0.5 * (z.T @ (p - labels) / len(z) + 0.01 * weights)
        bias -= 0.5 * float(np.mean(p - labels))
    train_accuracy = float(np.mean(((z @ weights + bias) > 0) == labels))
    # Two logits whose difference is the fitted score, folding in the scaling.
    kernel = np.zeros((x.shape[1], 2), "float32")
    kernel[:, 1] = weights / std
    model.classifier.kernel.assign(kernel)
    model.classifier.bias.assign(
        np.array([0.0, bias - float(weights @ (mean / std))], "float32")
    )
    model.save_to_preset(preset)
    return {"preset": preset, "train_accuracy": train_accuracy}


def export_all(workdir, backend):
    """Exports every artifact this backend makes (TF: all but torch/JAX ONNX)."""
    import kbert.export as export
    from kbert.export.model_source import load_model

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
            if flavour == "token_ids":
                # Dynamic batch at the benchmark's static length.
                options.update(batch_size=None, sequence_length=SEQUENCE_LENGTH)
            if quantization == "int8":
                # Full int8 is far from float32 on MiniLM (see checks.py):
                # accept it knowingly, so that `kbert verify` can show how far.
                options.update(tolerance=3.0)
            export.tflite(model, paths[key], **options)
            done[key] = "ok"
    export.onnx(model, paths[f"onnx {backend}"], source=preset)
    done[f"onnx {backend}"] = "ok"
    return done


def verify_all(workdir):
    from kbert.export.model_source import load_model
    from kbert.export.report import artifact_row, keras_row, report_table

    model = load_model(os.path.join(workdir, "classifier"))
    rows = [keras_row(model, num_examples=200, repeats=5)]
    for path in artifact_paths(workdir).values():
        rows.append(artifact_row(path, model, num_examples=200, repeats=5))
    return {"table": report_table(rows)}


def _features(preprocessor, texts):
    return {k: v.numpy() for k, v in preprocessor.preprocess(texts).items()}


def time_runtime(workdir, runtime, repeats):
    """Median seconds at batch 1 and batch 32 for one runtime."""
    import numpy as np

    from kbert.export.model_source import load_model

    preset = os.path.join(workdir, "classifier")
    one, many = reviews(1, 100), reviews(THROUGHPUT_BATCH, 100)
    paths = artifact_paths(workdir)
    if runtime == "keras":
        model = load_model(preset)
        call = keras_forward(model)
        batches = [_features(model.preprocessor, t) for t in (one, many)]
    elif runtime == "transformers":
        import tempfile

        import torch
        import transformers

        from kbert.presets.hf_save import save_hf

        model = load_model(preset)
        hf_dir = os.path.join(tempfile.mkdtemp(), "hf")
        save_hf(model, hf_dir)
        hf = transformers.BertForSequenceClassification.from_pretrained(hf_dir).eval()
        batches = [_features(model.preprocessor, t) for t in (one, many)]

        def call(x):
            with torch.no_grad():
                return hf(
                    input_ids=torch.from_numpy(x["token_ids"].astype("int64")),
                    token_type_ids=torch.from_numpy(x["segment_ids"].astype("int64")),
                    attention_mask=torch.from_numpy(x["padding_mask"].astype("int64")),
                ).logits
    elif runtime == "saved_model":
        import tensorflow as tf
        import tensorflow_text  # noqa: F401

        signature = tf.saved_model.load(paths["saved_model"]).signatures["serving_default"]
        batches = [tf.constant(t) for t in (one, many)]

        def call(x):
            return signature(text=x)["probabilities"].numpy()
    elif runtime.startswith("tflite mediapipe"):
        from kbert.export.runtimes import MediaPipeClassifierRunner

        classifier = MediaPipeClassifierRunner(paths[runtime])
        batches = [one, many]

        def call(texts):
            return classifier(texts)
    elif runtime.startswith("tflite string"):
        from kbert.export.runtimes import TFLiteRunner

        runner = TFLiteRunner(paths[runtime])
        batches = [{"text": np.array(t, object)} for t in (one, many)]
        call = runner
    elif runtime.startswith("tflite"):
        from kbert.export.runtimes import TFLiteRunner

        runner = TFLiteRunner(paths[runtime])
        model = load_model(preset)
        batches = [_features(model.preprocessor, t) for t in (one, many)]
        call = runner
    else:
        from kbert.export.runtimes import OnnxRunner

        runner = OnnxRunner(paths[runtime])
        model = load_model(preset)
        batches = [_features(model.preprocessor, t) for t in (one, many)]
        call = runner
    latency = time_call(lambda: call(batches[0]), repeats=repeats * 3, warmup=2)
    throughput = time_call(lambda: call(batches[1]), repeats=repeats, warmup=1)
    return {"latency_s": latency, "batch_s": throughput}


def worker(args):
    task = args.worker
    if task == "prepare":
        result = prepare(args.workdir)
    elif task == "export":
        result = export_all(args.workdir, args.backend)
    elif task == "verify":
        result = verify_all(args.workdir)
    else:
        result = time_runtime(args.workdir, args.runtime, args.repeats)
    print(json.dumps(result))


# --- driver -------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=os.path.join("/tmp", "kbert-runtimes"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--runtime", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    os.makedirs(args.workdir, exist_ok=True)
    script = os.path.abspath(__file__)
    common = ["--workdir", args.workdir, "--repeats", str(args.repeats)]
    if not args.skip_export:
        print(run_worker(script, ["--worker", "prepare", *common], "tensorflow"))
        for backend in BACKENDS:
            run_worker(
                script, ["--worker", "export", "--backend", backend, *common], backend
            )
        print(run_worker(script, ["--worker", "verify", *common], "tensorflow")["table"])
    runs = [("keras", backend) for backend in BACKENDS]
    runs += [("transformers", "torch"), ("saved_model", "tensorflow")]
    runs += [(f"tflite {f}_{q or 'float32'}", "tensorflow") for f, q in TFLITE]
    runs += [(f"onnx {backend}", "tensorflow") for backend in BACKENDS]
    results = {}
    for runtime, backend in runs:
        label = f"{runtime} ({backend})" if runtime == "keras" else runtime
        results[label] = run_worker(
            script, ["--worker", "time", "--runtime", runtime, *common], backend
        )
    base = results["transformers"]
    rows = []
    for label, result in results.items():
        rows.append(
            [
                label,
                f"{result['latency_s'] * 1e3:.1f}",
                f"{base['latency_s'] / result['latency_s']:.2f}x",
                f"{THROUGHPUT_BATCH / result['batch_s']:.1f}",
                f"{base['batch_s'] / result['batch_s']:.2f}x",
            ]
        )
    print(
        f"\nMiniLM-L6 classifier, real reviews packed to {SEQUENCE_LENGTH} tokens; "
        "ratios: speed relative to HF transformers (torch eager), higher is faster"
    )
    print_table(
        ["runtime", "batch 1 ms", "vs HF", f"batch {THROUGHPUT_BATCH} seq/s", "vs HF"],
        rows,
    )


if __name__ == "__main__":
    main()
