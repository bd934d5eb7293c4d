"""`kbert attention MODEL TEXT -o map.png`: an attention heat map of one text.

This module imports no Keras: `kbert --help` stays fast.
"""

import argparse

from kbert.utils.artifact_kinds import add_overwrite_argument


def add_attention_command(subparsers):
    """Declares `kbert attention MODEL TEXT -o PNG [--layer L] [--head H]`.

    Example:
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> _ = add_attention_command(parser.add_subparsers())
    >>> parser.parse_args(["attention", "m", "Hi there", "-o", "a.png"]).layer
    -1
    """
    parser = subparsers.add_parser(
        "attention",
        help="draw a layer/head attention heat map of a text as a PNG",
        description="Run MODEL (a kbert preset, HF directory or registered name) on "
        "TEXT with output_attentions=True and draw the attention probabilities of "
        "one layer and head (rows: attending word pieces, columns: attended ones).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("model")
    parser.add_argument("text")
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    parser.add_argument(
        "--layer", type=int, default=-1, help="layer index (0 = first, -1 = last)"
    )
    parser.add_argument(
        "--head", type=int, default=None, help="head index (default: mean of the heads)"
    )
    parser.add_argument(
        "--sequence-length", type=int, help="longest text in word pieces (the preset's)"
    )
    add_overwrite_argument(parser)
    parser.set_defaults(handler=attention_command)
    return parser


def attention_command(args):
    """Runs `kbert attention`; prints what was drawn and where."""
    # lazy: keep --help fast
    from kbert.inference.attention_plot import save_attention_map

    path, description = save_attention_map(
        args.model,
        args.text,
        args.output,
        layer=args.layer,
        head=args.head,
        sequence_length=args.sequence_length,
        overwrite=args.overwrite,
    )
    print(f"Wrote {path}: {description}")
    return 0
