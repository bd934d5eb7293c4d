"""Reports of a fine-tune: the training-curve PNG and the parity table."""

import os


def save_training_curve(curve, path, title="Training loss"):
    """Writes the per-step running training loss as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(curve.steps, curve.losses)
    axis.set_xlabel("step")
    axis.set_ylabel("running mean training loss")
    axis.set_title(title)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def format_table(headers, rows):
    """A Markdown table as a string."""
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), separator, *(line(row) for row in rows)])
