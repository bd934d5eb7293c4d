"""`kbert finetune`: fine-tune a classifier on the user's own CSV/JSONL file.

The defaults are `FinetuneRecipe`'s (the one home of the hyper-parameters);
`--help` shows them. This module imports no Keras: `kbert --help` stays fast.
"""

import argparse
import dataclasses
import os
import sys

from kbert.finetuning.recipe import FinetuneRecipe
from kbert.inference.embed_command import add_long_text_arguments
from kbert.pretraining.commands import add_cluster_arguments
from kbert.utils.artifact_kinds import add_overwrite_argument

RECIPE = FinetuneRecipe()
# Recipe fields -> the help of their flag.
RECIPE_FLAGS = {
    "preset": "checkpoint to start from (kbert preset, HF directory, registered name)",
    "sequence_length": "tokens per text, special tokens included",
    "batch_size": "examples per training step",
    "learning_rate": "peak AdamW learning rate",
    "warmup_fraction": "share of the steps with a linear warm-up",
    "weight_decay": "AdamW weight decay (not on LayerNorm and biases)",
    "epochs": "passes over the training file",
    "seed": "initialization and data order",
    "normalization": "tokenizer normalization: exact (the checkpoint's), or the "
    "deployment runtime's to train as you serve: mediapipe (lowercase, accents "
    "kept), tflite (tf-text's)",
    "lora_rank": "train LoRA factors of this rank on query and value (and the head) "
    "instead of every weight; 0: full fine-tuning",
}


def add_finetune_command(subparsers):
    """Declares `kbert finetune TRAIN [--validation V] [--test T] ...`.

    Example:
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> _ = add_finetune_command(parser.add_subparsers())
    >>> parser.parse_args(["finetune", "train.csv"]).learning_rate == RECIPE.learning_rate
    True
    """
    parser = subparsers.add_parser(
        "finetune",
        help="fine-tune a text classifier on a CSV or JSONL file",
        description="Fine-tune BertClassifier.from_preset(PRESET) on labelled texts "
        "(CSV with a header row, or JSONL): validation metrics after each epoch, "
        "a per-class precision/recall/F1 table on the test file (else validation, "
        "else train), and under --out: the fine-tuned preset, results.json, "
        "training_curve.png and confusion_matrix.png.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("train", help="training file (.csv or .jsonl)")
    parser.add_argument("--validation", help="validation file, same columns")
    parser.add_argument("--test", help="test file, same columns")
    parser.add_argument("--text-column", default="text", help="column of the texts")
    parser.add_argument("--pair-column", help="second text of a pair (optional)")
    parser.add_argument("--label-column", default="label", help="column of the labels")
    parser.add_argument(
        "--labels", help="comma-separated label names, in order (default: from train)"
    )
    for field in dataclasses.fields(FinetuneRecipe):
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            type=type(getattr(RECIPE, field.name)),
            default=getattr(RECIPE, field.name),
            help=RECIPE_FLAGS[field.name],
        )
    add_long_text_arguments(parser)
    parser.add_argument("--out", default="out/finetune", help="output directory")
    add_overwrite_argument(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(handler=finetune_command)
    return parser


def finetune_command(args):
    """Runs `kbert finetune`; prints per-epoch metrics, the per-class table
    and where the preset, results.json and the PNGs went."""
    # lazy: keep --help fast
    from kbert.finetuning.file_finetuning import finetune_on_files
    from kbert.models.divergence import TrainingDivergedError  # lazy: keep --help fast

    recipe = FinetuneRecipe(
        **{
            field.name: getattr(args, field.name)
            for field in dataclasses.fields(FinetuneRecipe)
        }
    )
    try:
        results = _finetune(finetune_on_files, args, recipe)
    except TrainingDivergedError as error:
        print(f"kbert finetune: error: {error}", file=sys.stderr)
        return 1
    if results is None:
        return 0  # not process 0 of a multi-process job: it reports
    paths = results["paths"]
    print(f"\nResults: {paths['results']}")
    print(f"Training curve: {paths['training_curve']}")
    print(f"Confusion matrix: {paths['confusion_matrix']}")
    print(f"Fine-tuned preset: {os.path.join(args.out, 'preset')}")
    return 0


def _finetune(finetune_on_files, args, recipe):
    return finetune_on_files(
        args.train,
        args.out,
        validation=args.validation,
        test=args.test,
        text_column=args.text_column,
        label_column=args.label_column,
        pair_column=args.pair_column,
        labels=args.labels.split(",") if args.labels else None,
        recipe=recipe,
        long_texts=args.long_texts,
        stride=args.stride,
        cluster={
            name: getattr(args, name)
            for name in ("coordinator", "num_processes", "process_id", "multi_process")
        },
        overwrite=args.overwrite,
    )
