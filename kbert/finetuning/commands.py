"""`kbert finetune`: fine-tune a classifier on the user's own CSV/JSONL file."""

import json
import os


def add_finetune_command(subparsers):
    parser = subparsers.add_parser(
        "finetune",
        help="fine-tune a text classifier on a CSV or JSONL file",
        description="Fine-tune BertClassifier.from_preset(PRESET) on labelled texts "
        "(CSV with a header row, or JSONL), report accuracy, save a preset.",
    )
    parser.add_argument("train", help="training file (.csv or .jsonl)")
    parser.add_argument("--validation", help="validation file, same columns")
    parser.add_argument("--test", help="test file, same columns")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--pair-column", help="second text of a pair (optional)")
    parser.add_argument("--label-column", default="label")
    parser.add_argument(
        "--labels", help="comma-separated label names (default: from train)"
    )
    parser.add_argument("--preset", default="all_minilm_l6_v2")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out/finetune", help="output directory")
    parser.set_defaults(handler=finetune_command)
    return parser


def finetune_command(args):
    import numpy as np

    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.recipe import FinetuneRecipe
    from kbert.finetuning.report import save_training_curve
    from kbert.finetuning.table_files import encode_labels, read_examples

    columns = dict(
        text_column=args.text_column,
        label_column=args.label_column,
        pair_column=args.pair_column,
    )
    texts, raw_labels = read_examples(args.train, **columns)
    names = args.labels.split(",") if args.labels else sorted({str(v) for v in raw_labels})
    if len(names) < 2:
        raise ValueError(f"{args.train}: need at least two labels; found {names}.")
    splits = {"train": (texts, encode_labels(raw_labels, names, args.train))}
    for split in ("validation", "test"):
        path = getattr(args, split)
        if path:
            split_texts, split_labels = read_examples(path, **columns)
            splits[split] = (split_texts, encode_labels(split_labels, names, path))
    recipe = FinetuneRecipe(
        preset=args.preset,
        sequence_length=args.sequence_length,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        epochs=args.epochs,
        seed=args.seed,
    )
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
        print(f"Test accuracy: {results['test_accuracy']:.4f}")
    os.makedirs(args.out, exist_ok=True)
    model.save_to_preset(os.path.join(args.out, "preset"))
    save_training_curve(curve, os.path.join(args.out, "training_curve.png"))
    with open(os.path.join(args.out, "results.json"), "w") as file:
        json.dump(results, file, indent=2)
    print(f"Saved the fine-tuned preset to {os.path.join(args.out, 'preset')}")
    return 0
