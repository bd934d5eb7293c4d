"""`kbert finetune`: fine-tune a classifier on the user's own CSV/JSONL file."""

import os


def add_finetune_command(subparsers):
    """Declares `kbert finetune TRAIN [--validation V] [--test T] ...`."""
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
    """Runs `kbert finetune`; prints the test accuracy and where the preset went."""
    # lazy: keep --help fast
    from kbert.finetuning.file_finetuning import finetune_on_files
    from kbert.finetuning.recipe import FinetuneRecipe

    recipe = FinetuneRecipe(
        preset=args.preset,
        sequence_length=args.sequence_length,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        epochs=args.epochs,
        seed=args.seed,
    )
    results = finetune_on_files(
        args.train,
        args.out,
        validation=args.validation,
        test=args.test,
        text_column=args.text_column,
        label_column=args.label_column,
        pair_column=args.pair_column,
        labels=args.labels.split(",") if args.labels else None,
        recipe=recipe,
    )
    if "test_accuracy" in results:
        print(f"Test accuracy: {results['test_accuracy']:.4f}")
    print(f"Saved the fine-tuned preset to {os.path.join(args.out, 'preset')}")
    return 0
