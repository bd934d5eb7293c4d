"""Reading a user's text, CSV, JSONL or JSON file, with errors that name the
file (and the line)."""

import csv
import io
import json
import os


def read_text(path):
    """The file as UTF-8 text; a clear error when it is missing, empty or not UTF-8."""
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
    if not text.strip():
        raise ValueError(f"{path}: the file is empty.")
    return text


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
