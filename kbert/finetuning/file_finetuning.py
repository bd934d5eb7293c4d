"""Fine-tuning a classifier on the user's own CSV or JSONL files (`kbert finetune`)."""

import contextlib
import dataclasses
import json
import os
import tempfile
import warnings

import keras
import numpy as np

from kbert.distributed import cluster as cluster_lib
from kbert.distributed.strategies import job_data_parallel
from kbert.finetuning.classifier_training import (
    build_classifier,
    classifier_optimizer,
    evaluate_classifier,
    long_text_counts,
    train_classifier,
)
from kbert.finetuning.metrics import classification_report, confusion_matrix, report_table
from kbert.finetuning.plots import save_confusion_matrix, save_training_curve
from kbert.finetuning.recipe import FinetuneRecipe
from kbert.models.classifier import BertClassifier
from kbert.models.divergence import TrainingDivergedError
from kbert.models.lora import trainable_summary
from kbert.utils.artifact_kinds import check_target
from kbert.utils.labelled_files import encode_labels, label_names, read_examples
from kbert.utils.long_texts import TruncationWarning


def finetune_on_files(
    train,
    out,
    validation=None,
    test=None,
    text_column="text",
    label_column="label",
    pair_column=None,
    labels=None,
    recipe=None,
    verbose=1,
    cluster=None,
    overwrite=False,
    long_texts="truncate",
    stride=None,
):
    """Fine-tunes `BertClassifier.from_preset(recipe.preset)` on labelled files.

    Reads `train` (and `validation`, `test`: same columns), trains with
    `recipe` (validation metrics after each epoch), evaluates on the test
    file (else the validation file, else the training file) and writes
    under `out`: the fine-tuned preset (`out/preset`), `training_curve.png`
    (training and validation loss), `confusion_matrix.png` and
    `results.json`. `labels` fixes the label names and their order
    (default: the sorted values in `train`); `recipe` defaults to
    `FinetuneRecipe()`. With `verbose`, prints one line per epoch and the
    per-class precision/recall/F1 table. `cluster`: the keyword arguments of
    `kbert.distributed.cluster.join_cluster` for a multi-process job. An `out`
    holding files kbert did not write is refused before any work unless
    `overwrite=True`. Returns the
    results: labels, the recipe, training seconds, the history, the
    evaluated split's metrics and per-class report (`test_accuracy` with a
    test file), and the paths written.

    In a multi-process job every process runs this with the same arguments
    and trains (data parallel) on its share of each batch
    (`train_classifier`); whole global batches only, so the schedule counts
    those. Process 0 writes the outputs, scores the test file with the
    saved preset and returns the results; the others return None.

    Texts longer than `recipe.sequence_length` are cut (`long_texts=
    "truncate"`) or read in windows sharing `stride` pieces (`"windows"`:
    trained on every window, scored on each text's mean logits); how many
    each file holds is printed and kept in `results["long_texts"]`.

    Example:
    >>> # Minutes of training: tests/finetuning runs it at toy size.
    >>> results = finetune_on_files("reviews.csv", "out/finetune",  # doctest: +SKIP
    ...     text_column="review", label_column="sentiment")
    """
    check_target(out, "finetune_output", overwrite)
    cluster_lib.join_cluster(**(cluster or {}))
    strategy = job_data_parallel() if cluster_lib.process_count() > 1 else None
    recipe = recipe or FinetuneRecipe()
    columns = dict(
        text_column=text_column, label_column=label_column, pair_column=pair_column
    )
    texts, raw_labels, lines = read_examples(train, **columns, with_lines=True)
    names = list(labels) if labels else label_names(raw_labels, train, lines)
    if len(names) < 2:
        raise ValueError(f"{train}: need at least two labels; found {names}.")
    splits = {"train": (texts, encode_labels(raw_labels, names, train, lines))}
    for split, path in (("validation", validation), ("test", test)):
        if path:
            split_texts, split_labels, lines = read_examples(
                path, **columns, with_lines=True
            )
            splits[split] = (split_texts, encode_labels(split_labels, names, path, lines))
    num_examples = len(splits["train"][1])
    num_shards, _ = cluster_lib.input_shard()
    if num_shards > 1:
        num_examples -= num_examples % recipe.batch_size
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = build_classifier(
            recipe,
            num_classes=len(names),
            num_examples=num_examples,
            id2label=dict(enumerate(names)),
        )
    trainable, total, summary = trainable_summary(model)
    if verbose:
        print(f"Fine-tuning {summary}.")
    stride = model._window_stride(long_texts, stride)
    long_report = {"mode": long_texts, "stride": stride}
    if long_texts == "windows":
        # fit takes a step per batch of windows: the schedule counts windows,
        # or it decays to 0 after the first len(texts) rows and stays there.
        num_examples = len(
            model.window_samples(splits["train"][0], stride)["example_index"]
        )
        long_report["train_windows"] = num_examples
        model.compile(optimizer=classifier_optimizer(recipe, num_examples))
    paths_of = {"train": train, "validation": validation, "test": test}
    for split, (x, _) in splits.items():
        long_report[split] = counts = long_text_counts(model, x)
        if verbose and counts["truncated"] and cluster_lib.is_chief():
            print(_long_text_line(paths_of[split], counts, recipe, long_texts))
    with warnings.catch_warnings():  # counted above, per file
        warnings.simplefilter("ignore", TruncationWarning)
        history, curve, seconds = train_classifier(
            model,
            recipe,
            splits["train"],
            splits.get("validation"),
            verbose=verbose,
            long_texts=long_texts,
            stride=stride,
        )
    paths = {
        "preset": os.path.join(out, "preset"),
        "results": os.path.join(out, "results.json"),
        "training_curve": os.path.join(out, "training_curve.png"),
        "confusion_matrix": os.path.join(out, "confusion_matrix.png"),
    }
    _check_finite_weights(model)
    # Reading variables that span processes is collective: every process
    # saves, the others into a scratch directory that is thrown away.
    with (
        contextlib.nullcontext(out)
        if cluster_lib.is_chief()
        else tempfile.TemporaryDirectory() as target
    ):
        os.makedirs(target, exist_ok=True)
        model.save_to_preset(os.path.join(target, "preset"), overwrite=overwrite)
    cluster_lib.barrier("fine-tuned preset saved")
    if not cluster_lib.is_chief():
        return None
    if num_shards > 1:
        # The trained weights span all processes; the chief alone evaluates,
        # with the saved preset on its own device.
        keras.distribution.set_distribution(None)
        model = BertClassifier.from_preset(paths["preset"])
    evaluated = next(split for split in ("test", "validation", "train") if split in splits)
    with warnings.catch_warnings():  # counted above, per file
        warnings.simplefilter("ignore", TruncationWarning)
        metrics, predictions = evaluate_classifier(
            model, *splits[evaluated], long_texts=long_texts, stride=stride
        )
    matrix = confusion_matrix(splits[evaluated][1], predictions, len(names))
    report = classification_report(matrix, names)
    results = {
        "labels": names,
        "recipe": dataclasses.asdict(recipe),
        "train_seconds": round(seconds, 1),
        "training_steps": recipe.total_steps(num_examples),
        "trainable_weights": trainable,
        "total_weights": total,
        "history": history,
        "evaluated_on": evaluated,
        f"{evaluated}_loss": round(metrics["loss"], 4),
        f"{evaluated}_accuracy": metrics["accuracy"],
        "long_texts": long_report,
        "classification_report": report,
        "confusion_matrix": matrix.tolist(),
        "paths": paths,
    }
    save_training_curve(curve, paths["training_curve"], "Fine-tuning loss")
    save_confusion_matrix(
        matrix, names, paths["confusion_matrix"], f"Confusion matrix ({evaluated} set)"
    )
    with open(paths["results"], "w") as file:
        file.write(results_json(results))
    if verbose:
        print(
            f"\n{evaluated.capitalize()} set ({len(predictions)} examples): "
            f"accuracy {metrics['accuracy']:.4f}, loss {metrics['loss']:.4f}"
        )
        print(report_table(report))
    return results


def _check_finite_weights(model):
    """Refuses to save a model whose weights are not all finite."""
    for variable in model.weights:
        value = np.asarray(keras.ops.convert_to_numpy(variable))
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            count = int(np.size(value) - np.isfinite(value).sum())
            raise TrainingDivergedError(
                f"Training diverged: {count} values of {variable.path} are not "
                "finite; no preset saved. Try a lower --learning-rate."
            )


def _finite(value):
    """`value` with every non-finite float (NaN, inf) as None."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


def results_json(results):
    """`results` as strict JSON: NaN and infinities written as `null`.

    Example:
    >>> json.loads(results_json({"loss": float("nan"), "steps": [0.5, float("inf")]}))
    {'loss': None, 'steps': [0.5, None]}
    """
    return json.dumps(_finite(results), indent=2, allow_nan=False)


def _long_text_line(path, counts, recipe, long_texts):
    """What `kbert finetune` prints about a file's texts over the sequence length."""
    line = (
        f"{path}: {counts['truncated']} of {counts['total']} texts are longer than "
        f"sequence_length={recipe.sequence_length} (the longest has "
        f"{counts['longest']} tokens): "
    )
    if long_texts == "windows":
        return line + "read in overlapping windows."
    return line + (
        "truncated. Read them whole with a longer --sequence-length or with "
        "--long-texts windows."
    )
