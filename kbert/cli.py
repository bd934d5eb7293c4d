"""The `kbert` command line: one subcommand per function, thin over the library.

A subcommand is a pair: `add_<name>_command(subparsers)` declares its
arguments and sets `handler`, and the handler takes the parsed arguments and
returns an exit status. Add new ones to `COMMANDS`.

Rule: declarations stay light. `kbert --help` imports every module that
defines an `add_*_command`, so such a module imports at its top only plain
Python (and NumPy): no Keras, TensorFlow, JAX or torch, nor a kbert module that
loads them. Choices and defaults come from light modules (`kbert.models.
task_names()`, `kbert.export.formats`, `kbert.pretraining.config`); the
handler imports the work inside its body, under a `# lazy: keep --help fast`
comment line. Help shows every option's default (no need to
write it in the help text). tests/test_cli.py checks all of this for every
subcommand.

Logs: before a handler runs, `kbert.utils.quiet` silences TensorFlow, absl,
gRPC and CUDA start-up lines (and keeps JAX on the CPU when there is no
GPU); `--verbose` brings them back.

Example:
    kbert convert all_minilm_l6_v2 out/minilm --to hf
"""

import argparse
import contextlib
import copy
import logging
import sys

from kbert.export.commands import add_export_command, add_verify_command
from kbert.finetuning.commands import add_finetune_command
from kbert.inference.attention_command import add_attention_command
from kbert.inference.embed_command import add_embed_command
from kbert.models import task_names
from kbert.presets import OUTPUT_FORMATS
from kbert.pretraining.commands import add_fill_mask_command, add_pretrain_command
from kbert.utils.artifact_kinds import add_overwrite_argument
from kbert.utils.quiet import logger_level, quiet_logs, quiet_process


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, also for options declared without help text.

    Example:
    >>> parser = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    >>> _ = parser.add_argument("--steps", type=int, default=10)
    >>> "(default: 10)" in parser.format_help()
    True
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if (
            "%(default)" in text
            or "default" in text
            or not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default: %(default)s)".strip()

    def _format_action(self, action):
        if not action.help:
            text = self._get_help_string(action)
            if text:
                action = copy.copy(action)
                action.help = text
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """The parser of `kbert` and of each subcommand: defaults shown, `--verbose`.

    Example:
    >>> Parser(prog="kbert").parse_args(["--verbose"]).verbose
    True
    """

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self.add_argument(
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show the TensorFlow, absl and CUDA logs hidden by default",
        )


@contextlib.contextmanager
def _print_loading_log():
    """Prints the converters' log lines (what was found and loaded) to stdout."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    with logger_level("kbert.presets", logging.INFO) as logger:
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)


def add_convert_command(subparsers):
    """Declares `kbert convert SOURCE DESTINATION [--to kbert|hf] [--task ...]`.

    Example:
        kbert convert bert_dir out --task classifier --num-classes 3
    """
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
        "--to", choices=OUTPUT_FORMATS, default="kbert", help="output format"
    )
    parser.add_argument(
        "--task",
        choices=("auto", *task_names()),
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
    add_overwrite_argument(parser)
    parser.set_defaults(handler=convert)


def convert(args):
    """Loads `args.source` as a kbert model, reports what it held, writes it out.

    Example:
    >>> argv = ["convert", classifier_preset, "out/hf", "--to", "hf"]
    >>> convert(build_parser().parse_args(argv))
    Loaded BertClassifier (classifier) from ...
      config: vocabulary_size=41, num_layers=2, ...
      vocabulary size: 41
      tokenizer: yes
      parameters: 1,906
    Wrote a Hugging Face directory to out/hf
    0
    """
    overrides = {}
    if args.num_classes is not None:
        overrides["num_classes"] = args.num_classes
    if args.num_choices is not None:
        overrides["num_choices"] = args.num_choices
    # lazy: keep --help fast
    from kbert.presets.convert import convert as convert_checkpoint

    with _print_loading_log():
        model, task, directory = convert_checkpoint(
            args.source,
            args.destination,
            to=args.to,
            task=args.task,
            weights_only=args.weights_only,
            overwrite=args.overwrite,
            **overrides,
        )
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
    print(
        f"Wrote {'a Hugging Face directory' if args.to == 'hf' else 'a kbert preset'} "
        f"to {args.destination}"
    )
    return 0


# Counts that must be at least 1, wherever a subcommand takes them: checked
# before any work (0 divided by zero, or was silently replaced by a default).
POSITIVE_FLAGS = ("batch_size", "sequence_length", "top_k", "workers", "shard_size")


def check_positive_flags(args):
    """Raises a `ValueError` naming the first flag of `POSITIVE_FLAGS` below 1
    (`kbert export --batch-size` also takes 'auto' and 'dynamic').

    Example:
    >>> check_positive_flags(argparse.Namespace(batch_size=0))
    Traceback (most recent call last):
    ValueError: --batch-size 0: must be a whole number, at least 1.
    """
    for name in POSITIVE_FLAGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, int) and value < 1:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} {value}: must be a whole number, at least 1.")


COMMANDS = (
    add_convert_command,
    add_finetune_command,
    add_embed_command,
    add_export_command,
    add_verify_command,
    add_pretrain_command,
    add_fill_mask_command,
    add_attention_command,
)


def build_parser():
    """The `kbert` argument parser, one subparser per entry of `COMMANDS`.

    Example:
    >>> build_parser().parse_args(["convert", "a", "b"]).to
    'kbert'
    """
    parser = Parser(
        prog="kbert", description="BERT in Keras 3: convert, fine-tune, export."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv=None):
    """Runs `kbert ...`; returns the exit status.

    Example:
    >>> main(["convert", "splade_tiny_mlm", "out/mlm"])  # a registered name
    Loaded 42 weights from ...
    Wrote a kbert preset to out/mlm
    0
    """
    args = build_parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    if argv is None:  # this process's own command line: filter its stderr too
        quiet_process(verbose)
    else:
        quiet_logs(verbose)
    try:
        check_positive_flags(args)
        return args.handler(args)
    except ValueError as error:
        print(f"kbert {args.command}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
