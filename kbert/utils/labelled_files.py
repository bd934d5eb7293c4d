"""Reading labelled examples from a user's CSV or JSONL file."""

import math

from kbert.utils.text_files import read_rows


def read_examples(path, text_column, label_column, pair_column=None, with_lines=False):
    r"""`(texts, labels)` from a CSV (with a header row) or JSONL file.

    `texts` is a list of str, or a tuple of two lists when `pair_column` is
    given; `labels` a list of the raw label values (str or number). With
    `with_lines=True`, also the file's line number of each example.

    Example:
    >>> with open("reviews.csv", "w") as file:
    ...     lines = ["review,sentiment", "A fine film.,fresh", "Dull.,rotten"]
    ...     print(*lines, sep="\n", file=file)
    >>> read_examples("reviews.csv", "review", "sentiment")
    (['A fine film.', 'Dull.'], ['fresh', 'rotten'])
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
    lines = [number for number, _ in rows]
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
    if with_lines:
        return texts, columns[label_column], lines
    return texts, columns[label_column]


KINDS = {"bool": "a boolean", "number": "a number", "text": "a text"}


def label_key(value):
    """`(kind, key)` of one label value: `1`, `1.0`, `"1"` and `" 1.0 "` are
    `("number", 1)`; `true`, `"True"` are `("bool", True)`; other strings
    `("text", value)`.

    Example:
    >>> label_key(1.0), label_key("1"), label_key("true"), label_key("pos")
    (('number', 1), ('number', 1), ('bool', True), ('text', 'pos'))
    """
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return "bool", text.lower() == "true"
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return "text", value
    else:
        raise ValueError(f"a label is {type(value).__name__} {value!r:.40}")
    if isinstance(number, float):
        if not math.isfinite(number):
            return "text", str(value)
        if number.is_integer():
            number = int(number)
    return "number", number


def label_name(key):
    """The class name of a `label_key`: `"1"`, `"0.5"`, `"true"`, `"pos"`.

    Example:
    >>> label_name(("number", 1)), label_name(("bool", False))
    ('1', 'false')
    """
    kind, value = key
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def _unified(keys):
    """Booleans read as 0 and 1 where the other labels are numbers."""
    kinds = {kind for kind, _ in keys}
    if kinds == {"bool", "number"}:
        return [("number", int(v)) if kind == "bool" else (kind, v) for kind, v in keys]
    return list(keys)


def _keys(labels, path, lines=None):
    keys = []
    for i, label in enumerate(labels):
        try:
            keys.append(label_key(label))
        except ValueError as error:
            line = lines[i] if lines else i + 1
            raise ValueError(
                f"{path}: line {line}: {error}; labels are text or numbers."
            ) from None
    return keys


def label_names(labels, path, lines=None):
    """The class names of raw `labels`, in id order: one class per value
    however it is written (`1`, `1.0`, `"1"`; `true` as 1 among numbers),
    numbers sorted numerically, texts alphabetically. Labels that mix texts
    with numbers or booleans are refused, naming the line (`lines`: each
    label's line number in `path`).

    Example:
    >>> label_names([0, "1.0", 1, 0.0, "10", "2"], "train.csv")
    ['0', '1', '2', '10']
    >>> label_names(["true", False, "True"], "train.csv")
    ['false', 'true']
    """
    keys = _keys(labels, path, lines)
    kinds = {kind for kind, _ in keys}
    if "text" in kinds and len(kinds) > 1:
        first = keys[0][0]
        at = next(i for i, (kind, _) in enumerate(keys) if kind != first)
        line = lines[at] if lines else at + 1
        raise ValueError(
            f"{path}: line {line} has label {labels[at]!r}, {KINDS[keys[at][0]]}, "
            f"where the labels before it are {KINDS[first]}s ({labels[0]!r}, ...); "
            "write every label the same way."
        )
    unique = sorted(set(_unified(keys)), key=lambda key: (key[0] == "text", key[1]))
    return [label_name(key) for key in unique]


def encode_labels(labels, label_names, path, lines=None):
    """Label values -> integer ids in `label_names`, one class per value
    however it is written (`label_key`); unknown ones are an error.

    Example:
    >>> encode_labels(["1", 0, 1.0, "true"], ["0", "1"], "train.csv")
    [1, 0, 1, 1]
    """
    index = {}
    for i, name in enumerate(label_names):
        index.setdefault(label_key(str(name)), i)
    for key, i in list(index.items()):  # booleans and 0/1 as one class
        if key[0] == "bool":
            index.setdefault(("number", int(key[1])), i)
        elif key[0] == "number" and key[1] in (0, 1):
            index.setdefault(("bool", bool(key[1])), i)
    keys = _keys(labels, path, lines)
    unknown = sorted({str(label) for label, key in zip(labels, keys) if key not in index})
    if unknown:
        raise ValueError(
            f"{path}: unknown labels {unknown[:10]}; known labels are "
            f"{[str(name) for name in label_names]}."
        )
    return [index[key] for key in keys]
