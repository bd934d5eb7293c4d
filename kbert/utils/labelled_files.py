"""Reading labelled examples from a user's CSV or JSONL file."""

from kbert.utils.text_files import read_rows


def read_examples(path, text_column, label_column, pair_column=None):
    r"""`(texts, labels)` from a CSV (with a header row) or JSONL file.

    `texts` is a list of str, or a tuple of two lists when `pair_column` is
    given; `labels` a list of the raw label values (str or number).

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
