"""Fine-tuning a classifier on the user's own CSV or JSONL files (`kbert finetune`)."""

import json
import os

import numpy as np

from kbert.finetuning.classifier_training import build_classifier, train_classifier
from kbert.finetuning.recipe import FinetuneRecipe
from kbert.finetuning.report import save_training_curve
from kbert.utils.labelled_files import encode_labels, read_examples


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
):
    """Fine-tunes `BertClassifier.from_preset(recipe.preset)` on labelled files.

    Reads `train` (and `validation`, `test`: same columns), trains with
    `recipe`, and writes under `out`: the fine-tuned preset (`out/preset`),
    `training_curve.png` and `results.json`. `labels` fixes the label names
    and their order (default: the sorted values in `train`); `recipe`
    defaults to `FinetuneRecipe()`. Returns the
    results: labels, training seconds, the history and, with a test file,
    its accuracy.

    Example:
    >>> # Minutes of training: tests/finetuning runs it at toy size.
    >>> results = finetune_on_files("reviews.csv", "out/finetune",  # doctest: +SKIP
    ...     text_column="review", label_column="sentiment")
    """
    recipe = recipe or FinetuneRecipe()
    columns = dict(
        text_column=text_column, label_column=label_column, pair_column=pair_column
    )
    texts, raw_labels = read_examples(train, **columns)
    names = list(labels) if labels else sorted({str(v) for v in raw_labels})
    if len(names) < 2:
        raise ValueError(f"{train}: need at least two labels; found {names}.")
    splits = {"train": (texts, encode_labels(raw_labels, names, train))}
    for split, path in (("validation", validation), ("test", test)):
        if path:
            split_texts, split_labels = read_examples(path, **columns)
            splits[split] = (split_texts, encode_labels(split_labels, names, path))
    model = build_classifier(
        recipe,
        num_classes=len(names),
        num_examples=len(splits["train"][1]),
        id2label=dict(enumerate(names)),
    )
    history, curve, seconds = train_classifier(
        model, recipe, splits["train"], splits.get("validation")
    )
    results = {"labels": names, "train_seconds": round(seconds, 1), "history": history}
    if "test" in splits:
        logits = model.predict(splits["test"][0], batch_size=64, verbose=0)
        results["test_accuracy"] = float(
            np.mean(np.argmax(logits, -1) == np.asarray(splits["test"][1]))
        )
    os.makedirs(out, exist_ok=True)
    model.save_to_preset(os.path.join(out, "preset"))
    save_training_curve(curve, os.path.join(out, "training_curve.png"))
    with open(os.path.join(out, "results.json"), "w") as file:
        json.dump(results, file, indent=2)
    return results
