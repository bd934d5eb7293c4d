"""`kbert export` and `kbert verify` on the command line.

`kbert.cli` wires them in: `add_export_command(subparsers)` and
`add_verify_command(subparsers)` declare the arguments and set `handler` to
a function that takes the parsed arguments and returns an exit status.

Example:
    kbert export out/classifier --format tflite --flavour mediapipe -o out/c.tflite
    kbert verify out/c.tflite out/classifier.onnx
"""

import json

from kbert.export.formats import (
    ALL_FLAVOURS,
    ALL_QUANTIZATIONS,
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_OPSET,
    NAMES,
    exporter_named,
    load,
)
from kbert.utils.artifact_kinds import add_overwrite_argument, check_target
from kbert.utils.labelled_files import read_examples


def add_export_command(subparsers):
    """Declares `kbert export MODEL --format ... --output PATH`.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_export_command(parser.add_subparsers())
    >>> parser.parse_args(["export", "m", "--format", "onnx", "-o", "m.onnx"]).opset
    18
    """
    parser = subparsers.add_parser(
        "export",
        help="export a model to SavedModel, TFLite, ONNX or OpenVINO IR",
        description="Export MODEL (a kbert preset directory, a Hugging Face or Google "
        "BERT directory, a registered name or a .keras file) and verify the artifact "
        "on its runtime against the Keras model on real sentences. Nothing is "
        "written at OUTPUT unless the outputs agree.",
    )
    parser.add_argument("model")
    parser.add_argument("--format", required=True, choices=NAMES)
    parser.add_argument("-o", "--output", required=True, help="artifact path to write")
    parser.add_argument(
        "--flavour",
        choices=ALL_FLAVOURS,
        default="token_ids",
        help="TFLite flavour",
    )
    parser.add_argument(
        "--quantization",
        choices=ALL_QUANTIZATIONS,
        help="TFLite or ONNX quantization (default: none, float32); dynamic_int8 is "
        "the one that keeps the predictions",
    )
    parser.add_argument(
        "--min-agreement",
        type=float,
        default=DEFAULT_MIN_AGREEMENT,
        help="a quantized artifact must predict as the Keras model does on this share "
        "of 500 held-out reviews, or it is not written",
    )
    parser.add_argument("--sequence-length", type=int, help="TFLite static sequence length")
    parser.add_argument(
        "--batch-size",
        default="auto",
        help="TFLite static batch size, or 'dynamic' (auto: 1, dynamic for string)",
    )
    parser.add_argument(
        "--text-pairs", action="store_true", help="a classifier of sentence pairs"
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        help="TFLite: accept this verification bound (relative when quantized)",
    )
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset")
    add_overwrite_argument(parser)
    parser.set_defaults(handler=export_command)


def export_command(args):
    """Runs `kbert export`; prints the verification summary.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_export_command(parser.add_subparsers())
    >>> export_command(parser.parse_args(
    ...     ["export", classifier_preset, "--format", "onnx", "-o", "c.onnx"]))
    Wrote c.onnx (onnx, classifier)
    Verified: {...}
    0
    """
    check_target(args.output, args.format, args.overwrite)
    # lazy: keep --help fast
    from kbert.export.model_source import load_model

    exporter = exporter_named(args.format)
    model = load_model(args.model)
    # The flags this format's export function takes (its row's `options`).
    options = {name: _option_value(args, name) for name in exporter.options}
    record = load(exporter.export)(
        model, args.output, source=args.model, overwrite=args.overwrite, **options
    )
    print(f"Wrote {args.output} ({record['format']}, {record['task']})")
    print("Verified: " + json.dumps(record["verification"], indent=2))
    if "quantized" in record:
        print("Quantized: " + json.dumps(record["quantized"], indent=2))
    if "cross_backend" in record:
        print(
            "Against the original backend: " + json.dumps(record["cross_backend"], indent=2)
        )
    return 0


def _option_value(args, name):
    """The exporter's keyword argument `name` from the parsed flags.

    Example:
    >>> import argparse
    >>> _option_value(argparse.Namespace(batch_size="dynamic"), "batch_size") is None
    True
    """
    value = getattr(args, name)
    if name == "text_pairs":
        return True if value else None
    if name == "batch_size" and value not in ("auto", None):
        return None if value == "dynamic" else int(value)
    return value


def add_verify_command(subparsers):
    """Declares `kbert verify ARTIFACT [ARTIFACT ...] [--model MODEL] [--data FILE]`.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_verify_command(parser.add_subparsers())
    >>> parser.parse_args(["verify", "a.onnx", "b.tflite"]).artifacts
    ['a.onnx', 'b.tflite']
    """
    parser = subparsers.add_parser(
        "verify",
        help="measure exported artifacts against their Keras model",
        description="Run each ARTIFACT (SavedModel directory, .tflite, .onnx, OpenVINO "
        "IR directory) on its "
        "runtime (an .onnx on onnxruntime and, when installed, OpenVINO at the precision "
        "it picks for this CPU and at float32) and print a table: size, runtime, "
        "max |artifact - Keras|, agreement with Keras, batch-1 latency, and the "
        "accuracy of a classifier on labelled examples you pass with --data (none "
        "without it).",
    )
    parser.add_argument("artifacts", nargs="+", metavar="artifact")
    parser.add_argument(
        "--model",
        help="the Keras model (default: the source named in the artifact's record)",
    )
    parser.add_argument(
        "--data", help="labelled examples (.csv with a header row, or .jsonl) for accuracy"
    )
    parser.add_argument("--text-column", default="text", help="text column of --data")
    parser.add_argument("--pair-column", help="second text of a pair in --data")
    parser.add_argument(
        "--label-column",
        default="label",
        help="label column of --data: the model's label names or class ids",
    )
    parser.add_argument(
        "--num-examples",
        type=int,
        default=200,
        help="examples measured: the first N of --data (at most 32 sentences without)",
    )
    parser.add_argument("--repeats", type=int, default=20, help="timed calls")
    parser.set_defaults(handler=verify_command)


def verify_command(args):
    """Runs `kbert verify`; prints the table.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_verify_command(parser.add_subparsers())
    >>> verify_command(parser.parse_args(["verify", onnx_file, "--model", classifier_preset,
    ...                                   "--num-examples", "8", "--repeats", "2"]))
    | artifact ...| keras ...| onnx ...
    0
    """
    # lazy: keep --help fast
    from kbert.export import record as records
    from kbert.export.model_source import load_model
    from kbert.export.report import (
        artifact_row,
        artifact_runtimes,
        keras_row,
        report_table,
    )

    first = args.artifacts[0]
    record = records.read_record(first)
    labelled = None
    if args.data:
        labelled = read_examples(
            args.data, args.text_column, args.label_column, pair_column=args.pair_column
        )
    model = _source_model(first, record, args.model, load_model)
    options = dict(labelled=labelled)
    rows = [
        keras_row(
            model,
            args.num_examples,
            args.repeats,
            text_pairs=record.get("text_pairs"),
            **options,
        )
    ]
    for artifact in args.artifacts:
        for runtime in artifact_runtimes(artifact):
            rows.append(
                artifact_row(
                    artifact, model, args.num_examples, args.repeats, runtime, **options
                )
            )
    print(report_table(rows))
    if labelled is None:
        print(
            "No accuracy without labelled data: pass --data FILE --text-column C "
            "--label-column L."
        )
    return 0


def _source_model(artifact, record, model, load_model):
    """The Keras model to compare with: `--model`, else the record's source."""
    if model:
        return load_model(model)
    source = record.get("source")
    if not source:
        raise ValueError(
            f"{artifact}: its export record names no source model; pass --model MODEL "
            "(the kbert preset, Hugging Face directory or .keras file it was exported "
            "from)."
        )
    try:
        return load_model(source)
    except (ValueError, OSError) as error:
        raise ValueError(
            f"{artifact}: cannot load its source model {source!r} ({error}); pass "
            "--model MODEL (the kbert preset, Hugging Face directory or .keras file it "
            "was exported from)."
        ) from None
