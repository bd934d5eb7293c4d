"""`kbert embed`: texts in, sentence embeddings out (.npy or JSONL)."""

import json

from kbert.utils.artifact_kinds import add_overwrite_argument, check_target
from kbert.utils.atomic import atomic_file
from kbert.utils.text_files import read_rows, read_text


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
    parser.add_argument("input")
    parser.add_argument("output", help="an .npy or .jsonl path")
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
    parser.set_defaults(handler=embed_command)


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
        lines = read_text(path).split("\n")
        if lines[-1] == "":  # the newline ending the last line
            lines.pop()
        texts = [line.removesuffix("\r") for line in lines]
    if not texts:
        raise ValueError(f"{path}: no texts to embed.")
    return texts


def embed_command(args):
    if not args.output.endswith((".npy", ".jsonl")):
        raise ValueError(f"OUTPUT must end in .npy or .jsonl; got {args.output!r}.")
    check_target(args.output, "embeddings", args.overwrite)
    # lazy: keep --help fast
    import numpy as np

    # lazy: keep --help fast
    from kbert.models.text_embedder import BertTextEmbedder

    texts = read_texts(args.input, args.text_column)
    overrides = {"sequence_length": args.sequence_length} if args.sequence_length else {}
    embedder = BertTextEmbedder.from_preset(args.preset, **overrides)
    embeddings = embedder.predict(
        texts,
        batch_size=args.batch_size,
        verbose=1,
        long_texts=args.long_texts,
        stride=args.stride,
    )
    embeddings = np.asarray(embeddings)
    with atomic_file(args.output) as tmp:
        if args.output.endswith(".npy"):
            with open(tmp, "wb") as file:
                np.save(file, embeddings.astype("float32"))
        else:
            with open(tmp, "w", encoding="utf-8") as file:
                for text, vector in zip(texts, embeddings):
                    row = {"text": text, "embedding": [round(float(v), 7) for v in vector]}
                    file.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"Wrote {len(texts)} embeddings of size {embeddings.shape[1]} to {args.output}")
    return 0
