"""The PNGs of a fine-tune: training/validation curves and a confusion matrix.

Both read well at any size, one training step included: every measured
point is drawn as a marker, so a curve of one point is a dot, not nothing.
"""

import os

import numpy as np


def _pyplot():
    import matplotlib  # lazy: matplotlib is optional, only for the PNGs

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is optional, only for the PNGs

    return plt


def _save(figure, plt, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def training_curve_figure(curve, title="Training loss"):
    """The matplotlib figure of `save_training_curve` (not yet saved).

    Example:
    >>> from kbert.finetuning.classifier_training import LossHistory
    >>> curve = LossHistory()
    >>> curve.steps, curve.losses = [1], [0.69]
    >>> training_curve_figure(curve).axes[0].lines[0].get_marker()
    'o'
    """
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib is optional

    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.5))
    steps = list(curve.steps)
    marker = "o" if len(steps) <= 200 else None
    axis.plot(
        steps, curve.losses, marker=marker, markersize=4, label="training (running mean)"
    )
    validation_steps = list(getattr(curve, "validation_steps", []))
    if validation_steps:
        axis.plot(
            validation_steps,
            curve.validation_losses,
            marker="s",
            markersize=7,
            linestyle="--",
            label="validation (end of epoch)",
        )
    last = max(steps + validation_steps + [1])
    axis.set_xlim(0.5, last + 0.5)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("training step")
    axis.set_ylabel("loss")
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend(loc="upper right")
    figure.tight_layout()
    return figure


def save_training_curve(curve, path, title="Training loss"):
    """Writes the per-step training loss and per-epoch validation loss as a PNG.

    `curve` is a `LossHistory` (`steps`, `losses`, and optionally
    `validation_steps`, `validation_losses`); every point is a marker. Returns
    `path`.

    Example:
    >>> from kbert.finetuning.classifier_training import LossHistory
    >>> curve = LossHistory()
    >>> curve.steps, curve.losses = [1], [0.69]  # one step still shows a point
    >>> save_training_curve(curve, "out/curve.png")
    'out/curve.png'
    """
    return _save(training_curve_figure(curve, title), _pyplot(), path)


def save_confusion_matrix(matrix, labels, path, title="Confusion matrix"):
    """Writes a labelled confusion matrix (counts in each cell) as a PNG.

    Rows are true labels, columns predicted ones. Returns `path`.

    Example:
    >>> save_confusion_matrix([[3, 1], [0, 4]], ["neg", "pos"], "out/confusion.png")
    'out/confusion.png'
    """
    matrix = np.asarray(matrix)
    plt = _pyplot()
    size = 2.5 + 0.5 * len(labels)
    figure, axis = plt.subplots(figsize=(size + 1, size))
    image = axis.imshow(matrix, cmap="Blues", vmin=0)
    figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    ticks = range(len(labels))
    axis.set_xticks(ticks, [str(label) for label in labels], rotation=45, ha="right")
    axis.set_yticks(ticks, [str(label) for label in labels])
    axis.set_xlabel("predicted")
    axis.set_ylabel("true")
    axis.set_title(title)
    threshold = matrix.max() / 2 if matrix.size else 0
    for row in range(matrix.shape[0]):
        for column in range(matrix.shape[1]):
            value = matrix[row, column]
            color = "white" if value > threshold else "black"
            axis.text(column, row, str(value), ha="center", va="center", color=color)
    figure.tight_layout()
    return _save(figure, plt, path)
