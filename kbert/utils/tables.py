"""Markdown tables, as the reports and benchmarks print them."""


def markdown_table(headers, rows):
    """A Markdown table as a string, columns padded to their widest cell.

    Example:
    >>> print(markdown_table(["backend", "seq/s"], [["jax", 82.5], ["torch", 53.9]]))
    | backend | seq/s |
    |---------|-------|
    | jax     | 82.5  |
    | torch   | 53.9  |
    """
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), separator, *(line(row) for row in rows)])
