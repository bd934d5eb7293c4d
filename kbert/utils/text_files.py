"""Reading a user's text, CSV, JSONL or JSON file, with errors that name the
file (and the line)."""

import csv
import glob
import io
import json
import os


def read_text(path, blank_is_empty=True):
    """The file as UTF-8 text; a clear error when it is missing, empty or not
    UTF-8. With `blank_is_empty=False` only a file of no bytes is empty (a
    blank line is a text)."""
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file.")
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(
            f"{path}: not UTF-8 (byte {error.start}, line {line}: {error.reason}). "
            "Re-encode the file as UTF-8."
        ) from None
    if not (text.strip() if blank_is_empty else text):
        raise ValueError(f"{path}: the file is empty.")
    return text


def read_lines(path):
    """One text per line, blank lines kept (as ""), so that row i is line i+1.

    A final newline ends the last line; lines end at "\\n" (a "\\r" before
    it is dropped), not at the other characters `str.splitlines` breaks on.

    Example:
    >>> with open("texts.txt", "w") as file:
    ...     _ = file.write("first\\n\\nthird\\n")
    >>> read_lines("texts.txt")
    ['first', '', 'third']
    """
    lines = read_text(path, blank_is_empty=False).split("\n")
    if lines[-1] == "":  # the newline ending the last line
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def expand_glob(pattern):
    """The files a path or glob names, sorted; a clear error when none match.

    A pattern without `*`, `?` or `[` is one path, returned as is (reading it
    says when it is missing).

    Example:
    >>> expand_glob("reviews-*.txt")
    Traceback (most recent call last):
    ValueError: reviews-*.txt: no files match.
    """
    pattern = os.fspath(pattern)
    if not glob.has_magic(pattern):
        return [pattern]
    paths = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
    if not paths:
        raise ValueError(f"{pattern}: no files match.")
    return paths


def read_json(path):
    """The parsed JSON file at `path`; a `ValueError` naming it when it is not JSON.

    Example:
    >>> with open("settings.json", "w") as file:
    ...     print('{"lowercase": true', file=file)
    >>> read_json("settings.json")
    Traceback (most recent call last):
    ValueError: settings.json is not valid JSON: Expecting ',' delimiter: ...
    """
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None


def read_rows(path):
    """`(line number, row dict)` pairs from a CSV (header row) or JSONL file."""
    text = read_text(path)
    if path.endswith((".jsonl", ".json")):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}: line {number} is not JSON ({error.msg})."
                ) from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object.")
            rows.append((number, row))
        return rows
    reader = csv.DictReader(io.StringIO(text))
    return [(number, row) for number, row in enumerate(reader, start=2)]
