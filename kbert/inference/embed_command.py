"""`kbert embed`: texts in, sentence embeddings out (.npy or JSONL).

Example:
    kbert embed reviews.txt emb.npy
    kbert embed 'reviews/*.txt' 'emb/part-*.npy' --engine ray --workers 2
"""

import json
import os

from kbert.utils.artifact_kinds import add_overwrite_argument, check_target
from kbert.utils.atomic import atomic_file
from kbert.utils.ray_engine import ENGINES
from kbert.utils.text_files import expand_glob, read_lines, read_rows


def add_long_text_arguments(parser):
    """`--long-texts truncate|windows` and `--stride S`."""
    parser.add_argument(
        "--long-texts",
        choices=("truncate", "windows"),
        default="truncate",
        help="texts over the sequence length: cut them (a warning counts them), or "
        "read them in overlapping windows whose outputs are averaged per text",
    )
    parser.add_argument(
        "--stride",
        type=int,
        help="word pieces shared by consecutive windows (with --long-texts windows; "
        "default min(pieces per window // 2, 128))",
    )


def add_embed_command(subparsers):
    parser = subparsers.add_parser(
        "embed",
        help="sentence embeddings for a file of texts",
        description="Embed texts with BertTextEmbedder.from_preset(PRESET): INPUT is a "
        "text file (one text per line), or a CSV/JSONL file with --text-column. "
        "Exactly one embedding per input line, in order: a blank line embeds the "
        "empty string, so row i of OUTPUT is line i+1 of INPUT (a final newline "
        "ends the last line, it does not add one). "
        "OUTPUT ending in .npy gets a (texts, dim) float32 array; .jsonl gets one "
        '{"text", "embedding"} object per line.',
    )
    parser.add_argument("input", help="a file, or a glob of files read in sorted order")
    parser.add_argument(
        "output",
        help="an .npy or .jsonl path; with a * in it (e.g. 'emb/part-*.npy'), one "
        "file per input file, the * replaced by 00000-of-00003, ...",
    )
    parser.add_argument("--text-column", help="column to read from a CSV/JSONL input")
    parser.add_argument("--preset", default="all_minilm_l6_v2")
    parser.add_argument(
        "--sequence-length",
        type=int,
        help="longest input in word pieces (default: the preset's, e.g. 256 for "
        "all_minilm_l6_v2 as sentence-transformers); batches pad only to their longest",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    add_overwrite_argument(parser)
    add_long_text_arguments(parser)
    add_engine_arguments(parser)
    parser.set_defaults(handler=embed_command)


def add_engine_arguments(parser):
    """`--engine local|ray`, `--workers N`, `--address`, `--shard-size`."""
    group = parser.add_argument_group(
        "engine",
        "run on worker processes of a distributed engine (pip install kbert-keras[ray]): "
        "each worker loads the model once and embeds shards of consecutive texts; "
        "the output is the one-process output, in input order",
    )
    group.add_argument("--engine", choices=ENGINES, default="local")
    group.add_argument(
        "--workers", type=int, default=2, help="worker processes (with --engine ray)"
    )
    group.add_argument(
        "--address",
        help="a Ray cluster to join (ray://head:10001, auto); default: a local Ray on "
        "127.0.0.1 with --workers CPUs",
    )
    group.add_argument(
        "--shard-size", type=int, default=1000, help="texts per task (with --engine ray)"
    )


def read_texts(path, text_column=None):
    """Texts from a plain file (one per line) or a column of a CSV/JSONL file.

    A plain file gives one text per line, blank lines included (as ""), so
    that rows of the output match line numbers; a final newline ends the
    last line. Lines end at "\\n" (a "\\r" before it is dropped), not at the
    other characters `str.splitlines` breaks on.
    """
    if text_column:
        rows = read_rows(path)
        missing = [number for number, row in rows if text_column not in row]
        if missing:
            raise ValueError(f"{path}: line {missing[0]} has no column {text_column!r}.")
        texts = [str(row[text_column]) for _, row in rows]
    else:
        texts = read_lines(path)
    if not texts:
        raise ValueError(f"{path}: no texts to embed.")
    return texts


def output_paths(output, count):
    """The output file of each of `count` input files: `*` in `output` becomes
    `00000-of-00003`, ...; without `*`, one file for all.

    Example:
    >>> output_paths("emb/part-*.npy", 2)
    ['emb/part-00000-of-00002.npy', 'emb/part-00001-of-00002.npy']
    """
    if "*" not in output:
        return [output]
    if output.count("*") > 1 or "*" in os.path.dirname(output):
        raise ValueError(f"OUTPUT takes one * in its file name; got {output!r}.")
    return [output.replace("*", f"{i:05d}-of-{count:05d}") for i in range(count)]


def embed_command(args):
    if not args.output.endswith((".npy", ".jsonl")):
        raise ValueError(f"OUTPUT must end in .npy or .jsonl; got {args.output!r}.")
    inputs = expand_glob(args.input)
    outputs = output_paths(args.output, len(inputs))
    for path in outputs:
        check_target(path, "embeddings", args.overwrite)
    # lazy: keep --help fast
    import numpy as np

    # lazy: keep --help fast
    from kbert.inference.distributed_predict import predict_shards

    # lazy: keep --help fast
    from kbert.models.text_embedder import BertTextEmbedder

    files = [read_texts(path, args.text_column) for path in inputs]
    overrides = {"sequence_length": args.sequence_length} if args.sequence_length else {}
    options = dict(
        batch_size=args.batch_size, long_texts=args.long_texts, stride=args.stride
    )
    if args.engine == "local":
        embedder = BertTextEmbedder.from_preset(args.preset, **overrides)
        everything = [text for texts in files for text in texts]
        embeddings = np.asarray(embedder.predict(everything, verbose=1, **options))
        starts = np.cumsum([0] + [len(texts) for texts in files])
        per_file = [embeddings[a:b] for a, b in zip(starts[:-1], starts[1:])]
    else:
        shards = [
            (index, texts[start : start + args.shard_size])
            for index, texts in enumerate(files)
            for start in range(0, len(texts), args.shard_size)
        ]
        results = predict_shards(
            args.preset,
            [texts for _, texts in shards],
            engine=args.engine,
            workers=args.workers,
            task=BertTextEmbedder.task_name,
            address=args.address,
            **options,
            **overrides,
        )
        per_file = [[] for _ in files]
        for (index, _), result in zip(shards, results):
            per_file[index].append(result)
        per_file = [np.concatenate(parts) for parts in per_file]
    if len(outputs) == 1:
        files = [[text for texts in files for text in texts]]
        per_file = [np.concatenate(per_file)]
    for path, texts, embeddings in zip(outputs, files, per_file):
        _write_embeddings(path, texts, embeddings)
    count, size = sum(len(texts) for texts in files), per_file[0].shape[1]
    where = outputs[0] if len(outputs) == 1 else f"{len(outputs)} files {args.output}"
    print(f"Wrote {count} embeddings of size {size} to {where}")
    return 0


def _write_embeddings(path, texts, embeddings):
    import numpy as np  # lazy: keep --help fast

    with atomic_file(path) as tmp:
        if path.endswith(".npy"):
            with open(tmp, "wb") as file:
                np.save(file, embeddings.astype("float32"))
        else:
            with open(tmp, "w", encoding="utf-8") as file:
                for text, vector in zip(texts, embeddings):
                    row = {"text": text, "embedding": [round(float(v), 7) for v in vector]}
                    file.write(json.dumps(row, ensure_ascii=False) + "\n")
