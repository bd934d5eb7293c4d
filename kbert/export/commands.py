"""`kbert export` and `kbert verify` on the command line.

`kbert.cli` wires them in: `add_export_command(subparsers)` and
`add_verify_command(subparsers)` declare the arguments and set `handler` to
a function that takes the parsed arguments and returns an exit status.

Example:
    kbert export out/classifier --format tflite --flavour mediapipe -o out/c.tflite
    kbert verify out/c.tflite out/classifier.onnx
"""

import json
import os
import sys

from kbert.export.checks import FLOAT_TOLERANCE, SAVED_MODEL_TOLERANCE
from kbert.export.formats import (
    AGREEMENT_TEXTS,
    ALL_FLAVOURS,
    ALL_QUANTIZATIONS,
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_MIN_COSINE,
    DEFAULT_OPSET,
    EXPORTERS,
    NAMES,
    RANKS,
    exporter_named,
    load,
)
from kbert.utils.artifact_kinds import add_overwrite_argument, check_target
from kbert.utils.labelled_files import read_examples

# Every format's flags: each row's `options`, by keyword name.
FLAGS = tuple(dict.fromkeys(option for e in EXPORTERS for option in e.options))
# `--format auto` chooses the format; of the format flags it takes these.
AUTO = "auto"
AUTO_OPTIONS = ("min_agreement",)


def add_export_command(subparsers):
    """Declares `kbert export MODEL --format ... --output PATH`.

    The format's flags default to None, "not given": the export function
    then uses its own default, and a flag the format does not take is
    refused (`check_flags`).

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_export_command(parser.add_subparsers())
    >>> args = parser.parse_args(["export", "m", "--format", "onnx", "-o", "m.onnx"])
    >>> args.opset is None, given_flags(args)
    (True, {})
    """
    parser = subparsers.add_parser(
        "export",
        help="export a model to SavedModel, TFLite, ONNX or OpenVINO IR",
        description="Export MODEL (a kbert preset directory, a Hugging Face or Google "
        "BERT directory, a registered name or a .keras file) and verify the artifact "
        "on its runtime against the Keras model on real sentences. Nothing is "
        "written at OUTPUT unless the outputs agree. A flag the format does not "
        "take is refused before anything is loaded.",
    )
    parser.add_argument("model")
    parser.add_argument(
        "--format",
        required=True,
        choices=(*NAMES, AUTO),
        help="the format; auto: export ONNX and OpenVINO (float32 and int8 each), "
        "measure each on its runtimes as kbert verify does, write the fastest that "
        "holds its bounds on this CPU to the OUTPUT directory, with ranking.json",
    )
    parser.add_argument("-o", "--output", required=True, help="artifact path to write")
    parser.add_argument(
        "--flavour",
        choices=ALL_FLAVOURS,
        help=f"{_formats_of('flavour')}: the flavour (default: token_ids)",
    )
    parser.add_argument(
        "--quantization",
        choices=ALL_QUANTIZATIONS,
        help=f"{_formats_of('quantization')}: the quantization (default: none, "
        "float32); dynamic_int8 is the one that keeps the predictions",
    )
    parser.add_argument(
        "--min-agreement",
        type=float,
        help=f"{_formats_of('min_agreement')}: a quantized artifact (OpenVINO: at "
        "its default precision for this CPU) must predict as the Keras model does "
        "on this share of 500 held-out reviews, or it is not written (default: "
        f"{DEFAULT_MIN_AGREEMENT}; for an embedder, a mean cosine of {DEFAULT_MIN_COSINE})",
    )
    parser.add_argument(
        "--sequence-length",
        type=int,
        help=f"{_formats_of('sequence_length')}: static sequence length (default: "
        "the preprocessor's for string and mediapipe, dynamic for token_ids)",
    )
    parser.add_argument(
        "--batch-size",
        help=f"{_formats_of('batch_size')}: static batch size, 'dynamic' or 'auto' "
        "(default auto: 1, dynamic for string)",
    )
    parser.add_argument(
        "--text-pairs",
        action="store_true",
        default=None,
        help=f"{_formats_of('text_pairs')}: a classifier of sentence pairs",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        help=f"{_formats_of('tolerance')}: accept this verification bound "
        f"(relative when quantized; default: {FLOAT_TOLERANCE:g}, per quantization when "
        "quantized)",
    )
    parser.add_argument(
        "--opset",
        type=int,
        help=f"{_formats_of('opset')}: the opset (default: {DEFAULT_OPSET})",
    )
    parser.add_argument(
        "--rank",
        choices=RANKS,
        help="--format auto: choose by batch-1 latency (default; a service answering "
        "one request at a time) or by texts per second in batches of 32 (batch jobs)",
    )
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
    >>> export_command(parser.parse_args(  # a flavour ONNX lacks: refused, not ignored
    ...     ["export", classifier_preset, "--format", "onnx", "--flavour", "mediapipe",
    ...      "-o", "s.onnx"]))
    Traceback (most recent call last):
    ...
    ValueError: --flavour mediapipe: --format onnx offers token_ids, string. ...
    """
    flags = given_flags(args)
    if args.format == AUTO:
        return _auto_command(args, flags)
    if getattr(args, "rank", None) is not None:
        raise ValueError(
            f"--rank applies to --format auto only (which ranks the formats it "
            f"exports); --format {args.format} writes one artifact. Nothing was "
            "loaded or written."
        )
    exporter = exporter_named(args.format)
    check_flags(exporter, flags)
    check_target(args.output, args.format, args.overwrite)
    # lazy: keep --help fast
    from kbert.presets.model_source import load_model

    model = load_model(args.model)
    # Only the flags given: the export function keeps its own defaults.
    options = {name: _option_value(name, value) for name, value in flags.items()}
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


def _auto_command(args, flags):
    """`kbert export --format auto`: prints the ranking and the artifact chosen."""
    for option in flags:
        if option not in AUTO_OPTIONS:
            raise ValueError(
                f"{_flag(option)} does not apply to --format auto: it chooses the "
                "format and quantization itself (of the format flags it takes "
                f"{', '.join(_flag(o) for o in AUTO_OPTIONS)}). Nothing was loaded or "
                "written."
            )
    check_target(args.output, AUTO, args.overwrite)
    # lazy: keep --help fast
    from kbert.export.auto_export import auto
    from kbert.presets.model_source import load_model
    from kbert.utils.tables import markdown_table

    model = load_model(args.model)
    rank = args.rank or RANKS[0]
    ranking = auto(
        model, args.output, source=args.model, overwrite=args.overwrite, rank=rank, **flags
    )
    print(
        markdown_table(
            (
                "artifact",
                "runtime",
                "latency ms",
                "texts/s",
                "agreement",
                "max |diff|",
                "bounds",
            ),
            [
                [
                    row["artifact"],
                    row["runtime"],
                    f"{row['latency_ms']:.2f}",
                    f"{row['texts_per_second']:.1f}",
                    f"{row['agreement']:.3f}",
                    f"{row['max_diff']:.2e}",
                    _bounds_cell(row),
                ]
                for row in ranking["rows"]
            ],
        )
    )
    for refused in ranking["refused"]:
        print(f"Refused {refused['artifact']}: {refused['reason']}")
    chosen = ranking["chosen"]
    speed = f"{chosen['latency_ms']:.2f} ms batch-1"
    if rank == "throughput":
        speed = f"{chosen['texts_per_second']:.1f} texts/s in batches"
    print(
        f"Wrote {os.path.join(args.output, chosen['file'])} ({chosen['artifact']}, run it "
        f"on {chosen['runtime']}: {speed}, {chosen['speedup_vs_keras']:.1f}x Keras) on "
        f"{ranking['cpu']}; the ranking is in {os.path.join(args.output, 'ranking.json')}."
    )
    return 0


def _bounds_cell(row):
    """`reference` (Keras), `ok` or `MISS`, and which row is the fastest."""
    if row["format"] == "keras":
        return "reference"
    return ("ok" if row["passed"] else "MISS") + (" (fastest)" if row["fastest"] else "")


def given_flags(args):
    """`{option: value}` of the format flags given on the command line (every
    row's `options`; a flag left out is None).

    Example:
    >>> import argparse
    >>> given_flags(argparse.Namespace(opset=17, flavour=None, text_pairs=None))
    {'opset': 17}
    """
    return {
        name: getattr(args, name) for name in FLAGS if getattr(args, name, None) is not None
    }


def check_flags(exporter, flags):
    """Raises `ValueError` naming the first flag of `flags` (`{option: value}`,
    as `given_flags`) that `exporter`'s row does not take, a value it does not
    offer, or an option of quantized artifacts given without a quantization.

    Example:
    >>> from kbert.export.formats import exporter_named
    >>> check_flags(exporter_named("tflite"), {"flavour": "string"})
    >>> check_flags(exporter_named("saved_model"), {"quantization": "int8"})
    Traceback (most recent call last):
    ...
    ValueError: --quantization does not apply to --format saved_model: ...
    >>> check_flags(exporter_named("onnx"), {"min_agreement": 0.9})
    Traceback (most recent call last):
    ...
    ValueError: --min-agreement applies to a quantized onnx artifact only: ...
    """
    name = exporter.name
    takes = ", ".join(_flag(option) for option in exporter.options) or "none of them"
    for option in flags:
        if option not in exporter.options:
            raise ValueError(
                f"{_flag(option)} does not apply to --format {name}: it is a flag of "
                f"--format {_formats_of(option)}. Of the format flags, {name} takes "
                f"{takes}. Nothing was loaded or written."
            )
    for option, offered in (
        ("flavour", exporter.flavours),
        ("quantization", tuple(q for q in exporter.quantizations if q)),
    ):
        if option in flags and flags[option] not in offered:
            raise ValueError(
                f"{_flag(option)} {flags[option]}: --format {name} offers "
                f"{', '.join(offered)}. Nothing was loaded or written."
            )
    if flags.get("quantization") is None:
        for option in exporter.quantized_options:
            if option in flags:
                choices = ", ".join(q for q in exporter.quantizations if q)
                raise ValueError(
                    f"{_flag(option)} applies to a quantized {name} artifact only: "
                    f"pass --quantization ({choices}) too, or leave it out. Nothing "
                    "was loaded or written."
                )


def _flag(option):
    """`"min_agreement"` -> `"--min-agreement"`."""
    return "--" + option.replace("_", "-")


def _formats_of(option):
    """The formats whose row takes `option`, e.g. `"tflite, onnx"`."""
    return ", ".join(e.name for e in EXPORTERS if option in e.options)


def _option_value(name, value):
    """The exporter's keyword argument `name` from a given flag's value.

    Example:
    >>> _option_value("batch_size", "dynamic") is None, _option_value("batch_size", "4")
    (True, 4)
    """
    if name == "batch_size" and value != "auto":
        if value == "dynamic":
            return None
        try:
            return int(value)
        except ValueError:
            raise ValueError(
                f"--batch-size {value}: a number, 'dynamic' or 'auto'."
            ) from None
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
        "without it). A gate: each row must hold its bounds, by default the ones its "
        "exporter verified it with; the exit status is 1 when any row misses them. "
        "Before anything loads, each artifact's bytes are checked against the sha256 "
        "its export record holds: a changed file is an error.",
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
        default=AGREEMENT_TEXTS,
        help="examples measured: the first N of --data, or without it N held-out "
        "reviews (default: the reviews the exporters check agreement on, so a "
        "quantized artifact is judged on the texts it was verified on)",
    )
    parser.add_argument("--repeats", type=int, default=20, help="timed calls")
    parser.add_argument(
        "--max-diff",
        type=float,
        help="every artifact row: each output's max |artifact - Keras| at most this "
        "(default: the row's own bound, the tolerance its exporter verified it with, "
        f"x max(1, max |Keras|): {FLOAT_TOLERANCE:g}, SavedModel "
        f"{SAVED_MODEL_TOLERANCE:g}, TFLite the one it records; "
        "none for a quantized ONNX or OpenVINO at bf16, bounded by agreement)",
    )
    parser.add_argument(
        "--min-agreement",
        type=float,
        help="every artifact row: agreement with Keras's predictions (mean cosine for "
        "embeddings) at least this (default: the row's own bound, the min_agreement "
        "of a quantized export or of OpenVINO at a precision below float32, "
        f"{DEFAULT_MIN_AGREEMENT} (embedders {DEFAULT_MIN_COSINE}) unless the export "
        "chose another; none for float32)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the rows as JSON (bounds, misses, passed) instead of the table",
    )
    parser.add_argument(
        "--rank",
        choices=RANKS,
        default=RANKS[0],
        help="name the fastest row by batch-1 latency (default; a service answering "
        "one request at a time) or by texts per second in batches of 32 (batch jobs; "
        "OpenVINO runs a request per stream)",
    )
    parser.set_defaults(handler=verify_command)


def verify_command(args):
    """Runs `kbert verify`; prints the table and the rows that miss their
    bounds; returns 1 when any row misses them, else 0.

    First, before loading anything, each artifact's bytes are checked
    against the sha256 its export record holds
    (`kbert.export.record.checked_record`): a changed, missing or unreadable
    file raises `ValueError` naming it (`kbert verify: error: ...`, exit 1).

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbert")
    >>> add_verify_command(parser.add_subparsers())
    >>> verify_command(parser.parse_args(["verify", onnx_file, "--model", classifier_preset,
    ...                                   "--num-examples", "8", "--repeats", "2"]))
    | artifact ...| keras ...| onnx ...
    All ... artifact rows hold their bounds.
    Fastest within its bounds on this CPU (...): classifier.onnx on ... ms batch-1 ...
    0
    >>> verify_command(parser.parse_args(["verify", onnx_file, "--model", classifier_preset,
    ...                                   "--num-examples", "8", "--repeats", "2",
    ...                                   "--max-diff", "0"]))  # doctest: +ELLIPSIS
    | artifact ...
    classifier.onnx (onnxruntime (CPU)) misses its bounds: output 'logits' differs ...
    1
    """
    # lazy: keep --help fast
    from kbert.export import record as records
    from kbert.export.measurements import (
        artifact_row,
        artifact_runtimes,
        fastest_row,
        gate,
        json_rows,
        keras_row,
        measurement_table,
        time_rows,
    )
    from kbert.presets.model_source import load_model
    from kbert.utils.cpu import cpu_name

    # Each artifact's bytes against its record's checksums, before anything loads.
    checked = {artifact: records.checked_record(artifact) for artifact in args.artifacts}
    first = args.artifacts[0]
    record = checked[first][0]
    labelled = None
    if args.data:
        labelled = read_examples(
            args.data, args.text_column, args.label_column, pair_column=args.pair_column
        )
    model = _source_model(first, record, args.model, load_model)
    options = dict(labelled=labelled, timed=False)
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
                    artifact,
                    model,
                    args.num_examples,
                    args.repeats,
                    runtime,
                    record=checked[artifact][0],
                    **options,
                )
            )
    rows = gate(time_rows(rows, args.repeats), args.max_diff, args.min_agreement)
    missed = [row for row in rows if not row.get("passed", True)]
    # With --json, stdout is the JSON alone; the words go to stderr.
    words = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps(json_rows(rows, args.rank), indent=2))
    else:
        print(measurement_table(rows))
    for _, note in checked.values():
        if note:
            print(f"Note: {note}", file=words)
    if labelled is None:
        print(
            "No accuracy without labelled data: pass --data FILE --text-column C "
            "--label-column L.",
            file=words,
        )
    for row in missed:
        print(
            f"{row['artifact']} ({row['runtime']}) misses its bounds: "
            + "; ".join(row["misses"]),
            file=words,
        )
    if not missed:
        print(f"All {len(rows) - 1} artifact rows hold their bounds.", file=words)
    fastest = fastest_row(rows, args.rank)
    if fastest is not None:
        keras = rows[0]
        speed = (
            f"{fastest['latency ms']:.2f} ms batch-1 latency "
            f"({keras['latency ms'] / fastest['latency ms']:.1f}x Keras' "
            f"{keras['latency ms']:.2f} ms)"
        )
        if args.rank == "throughput":
            speed = (
                f"{fastest['texts/s']:.1f} texts/s in batches of 32 "
                f"({fastest['texts/s'] / keras['texts/s']:.1f}x Keras' "
                f"{keras['texts/s']:.1f})"
            )
        print(
            f"Fastest within its bounds on this CPU ({cpu_name()}): {fastest['artifact']} "
            f"on {fastest['runtime']}, {speed}.",
            file=words,
        )
    return 1 if missed else 0


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
