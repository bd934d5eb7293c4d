"""Reading labelled examples from a user's CSV or JSONL file."""

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


def read_examples(path, text_column, label_column, pair_column=None):
    """`(texts, labels)` from a CSV (with a header row) or JSONL file.

    `texts` is a list of str, or a tuple of two lists when `pair_column` is
    given; `labels` a list of the raw label values (str or number).

    Example:
    >>> texts, labels = read_examples("reviews.csv", "review", "sentiment")
    """
    rows = read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no examples (only a header, or blank lines).")
    wanted = [c for c in (text_column, pair_column, label_column) if c]
    available = sorted({key for _, row in rows for key in row})
    missing = [c for c in wanted if c not in available]
    if missing:
        raise ValueError(f"{path}: no column {missing}; the file has columns {available}.")
    columns = {c: [] for c in wanted}
    for number, row in rows:
        for column in wanted:
            value = row.get(column)
            if value is None or (column == label_column and str(value).strip() == ""):
                raise ValueError(
                    f"{path}: line {number} has no value in column {column!r}."
                )
            columns[column].append(value if column == label_column else str(value))
    texts = columns[text_column]
    if pair_column:
        texts = (texts, columns[pair_column])
    return texts, columns[label_column]


def encode_labels(labels, label_names, path):
    """Label values -> integer ids in `label_names`; unknown ones are an error."""
    index = {str(name): i for i, name in enumerate(label_names)}
    unknown = sorted({str(label) for label in labels} - set(index))
    if unknown:
        raise ValueError(
            f"{path}: unknown labels {unknown[:10]}; known labels are {list(index)}."
        )
    return [index[str(label)] for label in labels]
