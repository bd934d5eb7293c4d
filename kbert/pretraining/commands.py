"""`kbert pretrain` and `kbert fill-mask`: the command-line front of pretraining.

`add_pretrain_command(subparsers)` and `add_fill_mask_command(subparsers)`
declare the subcommands and set `handler` to a function that takes the
parsed arguments and returns an exit status. `kbert pretrain` runs
`kbert.pretraining.pipeline.run_pretraining` (rerun the same command to
resume); its flags are the fields of `PretrainingConfig`, with its defaults.

Example:
    kbert pretrain --corpus wikipedia --output runs/wiki --steps 2000
    kbert fill-mask runs/wiki/model "The [MASK] of France is Paris."
"""

import dataclasses
import json
import sys

from kbert.pretraining.config import DISTRIBUTIONS, PretrainingConfig
from kbert.utils.artifact_kinds import add_overwrite_argument
from kbert.utils.ray_engine import ENGINES

DEFAULTS = {field.name: field.default for field in dataclasses.fields(PretrainingConfig)}


def add_pretrain_command(subparsers):
    """Declares `kbert pretrain` on an argparse `subparsers`.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> subparser = add_pretrain_command(parser.add_subparsers())
    >>> args = parser.parse_args(["pretrain", "--corpus", "wikipedia", "--output", "out"])
    >>> args.steps == PretrainingConfig.steps, args.handler is run_pretrain
    (True, True)
    """
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain a BERT (masked LM + next-sentence prediction) from text",
        description="Train a WordPiece vocabulary, create pretraining data and "
        "pretrain a BertPretrainer, all under OUTPUT. Rerun the same command to "
        "resume after an interruption.",
    )
    data = parser.add_argument_group("corpus and data")
    data.add_argument(
        "--corpus",
        nargs="+",
        required=True,
        help="'wikipedia' (206 articles shipped in gensim==4.4.0) or text files "
        "with one sentence per line and blank lines between documents",
    )
    data.add_argument("--eval-corpus", nargs="+", help="held-out text files")
    data.add_argument(
        "--eval-fraction",
        type=float,
        default=DEFAULTS["eval_fraction"],
        help="documents held out for evaluation when no --eval-corpus",
    )
    data.add_argument("--output", required=True, help="run directory")
    add_overwrite_argument(data)
    data.add_argument(
        "--restart",
        action="store_true",
        help="discard the run already in OUTPUT (vocabulary, data, checkpoints, model) "
        "and start afresh; without it a rerun resumes, and one with another corpus "
        "or model shape is refused",
    )
    data.add_argument("--vocabulary", help="an existing vocab.txt (else one is trained)")
    data.add_argument("--vocabulary-size", type=int, default=DEFAULTS["vocabulary_size"])
    data.add_argument("--cased", action="store_true", help="keep case (default: lowercase)")
    data.add_argument("--max-seq-length", type=int, default=DEFAULTS["max_seq_length"])
    data.add_argument(
        "--max-predictions-per-seq", type=int, default=DEFAULTS["max_predictions_per_seq"]
    )
    data.add_argument("--masked-lm-prob", type=float, default=DEFAULTS["masked_lm_prob"])
    data.add_argument("--short-seq-prob", type=float, default=DEFAULTS["short_seq_prob"])
    data.add_argument("--dupe-factor", type=int, default=DEFAULTS["dupe_factor"])
    data.add_argument("--whole-word-masking", action="store_true")
    data.add_argument(
        "--masking",
        choices=("static", "dynamic"),
        default=DEFAULTS["masking"],
        help="mask once when creating data, or anew every epoch",
    )
    data.add_argument(
        "--data-engine",
        choices=ENGINES,
        default=DEFAULTS["data_engine"],
        help="create the data in this process, or on Ray Data workers (pip install "
        "kbert-keras[ray]): the same records for the same seed",
    )
    data.add_argument(
        "--data-workers",
        type=int,
        default=DEFAULTS["data_workers"],
        help="Ray workers creating the data",
    )
    data.add_argument(
        "--ray-address",
        help="a Ray cluster to create the data on (ray://head:10001, auto); default: a "
        "local Ray on 127.0.0.1 with --data-workers CPUs",
    )
    model = parser.add_argument_group("model")
    model.add_argument("--num-layers", type=int, default=DEFAULTS["num_layers"])
    model.add_argument("--hidden-dim", type=int, default=DEFAULTS["hidden_dim"])
    model.add_argument("--num-heads", type=int, default=DEFAULTS["num_heads"])
    model.add_argument("--intermediate-dim", type=int, default=DEFAULTS["intermediate_dim"])
    model.add_argument("--dropout", type=float, default=DEFAULTS["dropout"])
    model.add_argument(
        "--dtype",
        default=DEFAULTS["dtype"],
        choices=("float32", "mixed_bfloat16", "mixed_float16"),
    )
    model.add_argument(
        "--jit-compile",
        choices=("auto", "on", "off"),
        default=DEFAULTS["jit_compile"],
        help="XLA compilation; auto: on for TensorFlow and JAX, off for torch",
    )
    model.add_argument(
        "--run-eagerly", action="store_true", help="no graph compilation (debugging)"
    )
    train = parser.add_argument_group("training")
    train.add_argument(
        "--steps", type=int, default=DEFAULTS["steps"], help="optimizer steps"
    )
    train.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"])
    train.add_argument(
        "--steps-per-epoch", type=int, help="default: one pass over the data"
    )
    train.add_argument(
        "--optimizer", choices=("adamw", "lamb"), default=DEFAULTS["optimizer"]
    )
    train.add_argument("--learning-rate", type=float, default=DEFAULTS["learning_rate"])
    train.add_argument("--warmup-steps", type=int, default=DEFAULTS["warmup_steps"])
    train.add_argument("--weight-decay", type=float, default=DEFAULTS["weight_decay"])
    train.add_argument(
        "--clipnorm", type=float, default=DEFAULTS["clipnorm"], help="global-norm clipping"
    )
    train.add_argument(
        "--save-every", type=int, default=DEFAULTS["save_every"], help="checkpoint interval"
    )
    train.add_argument("--log-every", type=int, default=DEFAULTS["log_every"])
    train.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        default=DEFAULTS["distribution"],
        help="JAX: data_parallel / model_parallel; TensorFlow: mirrored (one process), "
        "multi_worker_mirrored (TF_CONFIG; chosen by itself when it names 2+ workers)",
    )
    train.add_argument(
        "--model-parallel-size", type=int, default=DEFAULTS["model_parallel_size"]
    )
    train.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    train.add_argument("--quiet", action="store_true", help="no progress bars")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=run_pretrain)
    return parser


def add_cluster_arguments(parser):
    """Flags a cluster launcher sets for one process of a multi-process job.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_cluster_arguments(parser)
    >>> parser.parse_args(["--coordinator", "10.0.0.1:1234", "--num-processes", "2",
    ...                    "--process-id", "1"]).process_id
    1
    """
    group = parser.add_argument_group(
        "multi-process jobs (JAX; on TensorFlow set TF_CONFIG instead, one per worker)",
        "Start the same command once per process. Without flags, the variables "
        "KERAS_DISTRIBUTION_JOB_ADDRESSES / _NUM_PROCESSES / _PROCESS_ID, "
        "JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID or SLURM's "
        "are read; OUTPUT must be on a file system all processes share.",
    )
    group.add_argument("--coordinator", help="host:port of process 0")
    group.add_argument("--num-processes", type=int, help="processes in the job")
    group.add_argument("--process-id", type=int, help="this process, 0..N-1")
    group.add_argument(
        "--multi-process",
        action="store_true",
        help="join the job JAX detects itself (Cloud TPU pod slice, SLURM, Open MPI)",
    )


def add_fill_mask_command(subparsers):
    """Declares `kbert fill-mask` on an argparse `subparsers`.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> subparser = add_fill_mask_command(parser.add_subparsers())
    >>> parser.parse_args(["fill-mask", "out/model", "The [MASK] sat."]).top_k
    5
    """
    parser = subparsers.add_parser(
        "fill-mask",
        help="print the top-k predictions for each [MASK] in a sentence",
        description="Load a pretrained model (a kbert preset with its vocabulary, "
        "e.g. OUTPUT/model of `kbert pretrain`) and fill in [MASK] tokens.",
    )
    parser.add_argument("model", help="preset directory")
    parser.add_argument("text", nargs="+", help="sentences containing [MASK]")
    parser.add_argument("--top-k", type=int, default=5)
    parser.set_defaults(handler=run_fill_mask)
    return parser


def run_fill_mask(args):
    """Runs `kbert fill-mask`: prints the top-k tokens for each `[MASK]`.

    Loads the model as a `BertMaskedLM` (a pretrainer's preset too): the
    masked-LM head is all it runs, so a missing pooler or next-sentence head
    is no concern of it.
    """
    # lazy: keep --help fast
    from kbert.models.masked_lm import BertMaskedLM
    from kbert.pretraining.fill_mask import fill_mask

    model = BertMaskedLM.from_preset(args.model)
    if model.preprocessor is None:
        raise ValueError(f"{args.model} has no vocabulary (vocab.txt) to tokenize with.")
    tokenizer = model.preprocessor.tokenizer
    for text in args.text:
        print(text)
        for index, predictions in enumerate(fill_mask(model, tokenizer, text, args.top_k)):
            shown = "  ".join(f"{token} ({p:.3f})" for token, p in predictions)
            print(f"  [MASK] {index + 1}: {shown}")
    return 0


def run_pretrain(args):
    """Runs `kbert pretrain`: the pipeline of `kbert.pretraining.pipeline`."""
    # lazy: keep --help fast
    from kbert.pretraining.checkpointing import TrainingDivergedError
    from kbert.pretraining.pipeline import run_pretraining

    config = PretrainingConfig(
        **{name: getattr(args, name) for name in DEFAULTS if hasattr(args, name)}
    )
    try:
        results = run_pretraining(config)
    except TrainingDivergedError as error:
        print(f"kbert pretrain: training stopped: {error}", file=sys.stderr)
        return 2
    print(json.dumps(results, indent=2))
    return 0
