"""The `kbert` command line: one subcommand per function, thin over the library.

A subcommand is a pair: `add_<name>_command(subparsers)` declares its
arguments and sets `handler`, and the handler takes the parsed arguments and
returns an exit status. Add new ones to `COMMANDS`.

Example:
    kbert convert all_minilm_l6_v2 out/minilm --to hf
"""

import argparse
import contextlib
import logging
import sys

from kbert.export.commands import add_export_parser, add_verify_parser
from kbert.finetuning.commands import add_finetune_command
from kbert.inference.embed_command import add_embed_command
from kbert.pretraining.commands import add_fill_mask_parser, add_pretrain_parser


@contextlib.contextmanager
def _print_loading_log():
    """Prints the converters' log lines (what was found and loaded) to stdout."""
    logger = logging.getLogger("kbert.presets")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def add_convert_command(subparsers):
    """Declares `kbert convert SOURCE DESTINATION [--to kbert|hf] [--task ...]`.

    Example:
        kbert convert bert_dir out --task classifier --num-classes 3
    """
    from kbert.presets.tasks import TASK_CLASSES

    parser = subparsers.add_parser(
        "convert",
        help="convert a checkpoint (HF, Google BERT, kbert, registered name) "
        "to a kbert preset or an HF directory",
        description="Load SOURCE (a kbert preset, a Hugging Face or original Google "
        "BERT directory, or a name from kbert.list_presets()) as a kbert model and "
        "write it to DESTINATION.",
    )
    parser.add_argument("source")
    parser.add_argument("destination")
    parser.add_argument(
        "--to", choices=("kbert", "hf"), default="kbert", help="output format (kbert)"
    )
    parser.add_argument(
        "--task",
        choices=("auto", *TASK_CLASSES),
        default="auto",
        help="model to build; auto (default) takes the one the checkpoint holds",
    )
    parser.add_argument("--num-classes", type=int, help="for a classifier without head")
    parser.add_argument("--num-choices", type=int, help="for multiple_choice")
    parser.add_argument(
        "--weights-only",
        action="store_true",
        help="convert the weights without the tokenizer files",
    )
    parser.set_defaults(handler=convert)


def convert(args):
    """Loads `args.source` as a kbert model, reports what it held, writes it out.

    Example:
    >>> convert(build_parser().parse_args(["convert", "hf_dir", "out", "--to", "hf"]))
    0
    """
    from kbert.presets.hf_save import save_hf
    from kbert.presets.loader import resolve_source
    from kbert.presets.tasks import TASK_CLASSES, detect_task
    from kbert.presets.weight_map import progress_bar

    directory = resolve_source(args.source)
    task = detect_task(directory) if args.task == "auto" else args.task
    cls = TASK_CLASSES[task]
    overrides = {}
    if args.num_classes is not None:
        overrides["num_classes"] = args.num_classes
    if args.num_choices is not None:
        overrides["num_choices"] = args.num_choices
    if args.weights_only:
        overrides["preprocessor"] = None
    with _print_loading_log(), progress_bar():
        model = cls.from_preset(directory, **overrides)
    backbone = getattr(model, "backbone", model)
    preprocessor = getattr(model, "preprocessor", None)
    print(f"Loaded {type(model).__name__} ({task}) from {directory}")
    print(
        "  config: "
        + ", ".join(
            f"{key}={value}"
            for key, value in backbone.get_config().items()
            if key not in ("name", "trainable", "dtype")
        )
    )
    print(f"  vocabulary size: {backbone.vocabulary_size}")
    print(f"  tokenizer: {'yes' if preprocessor is not None else 'none'}")
    print(f"  parameters: {model.count_params():,}")
    if args.to == "hf":
        save_hf(model, args.destination)
    else:
        model.save_to_preset(args.destination)
    print(
        f"Wrote {'a Hugging Face directory' if args.to == 'hf' else 'a kbert preset'} "
        f"to {args.destination}"
    )
    return 0


COMMANDS = (
    add_convert_command,
    add_finetune_command,
    add_embed_command,
    add_export_parser,
    add_verify_parser,
    add_pretrain_parser,
    add_fill_mask_parser,
)


def build_parser():
    """The `kbert` argument parser, one subparser per entry of `COMMANDS`.

    Example:
    >>> build_parser().parse_args(["convert", "a", "b"]).to
    'kbert'
    """
    parser = argparse.ArgumentParser(
        prog="kbert", description="BERT in Keras 3: convert, fine-tune, export."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv=None):
    """Runs `kbert ...`; returns the exit status.

    Example:
    >>> main(["convert", "all_minilm_l6_v2", "out/minilm", "--to", "hf"])
    0
    """
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        print(f"kbert {args.command}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
