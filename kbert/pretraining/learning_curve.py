"""The learning curve of a run, from its `metrics.jsonl`, as a PNG."""

from kbert.pretraining.training import read_metrics


def plot_learning_curve(metrics_path, png_path, title="BERT pretraining"):
    """Plots loss and MLM / NSP accuracy against steps (training and held-out).

    Needs matplotlib (`pip install matplotlib`). Returns `png_path`.

    Example:
    >>> metrics = os.path.join(pretraining_run, "metrics.jsonl")
    >>> summary = plot_learning_curve(metrics, "learning_curve.png")
    >>> os.path.getsize("learning_curve.png") > 0
    True
    """
    import matplotlib  # lazy: matplotlib is optional

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is optional

    records = read_metrics(metrics_path)
    panels = (
        ("loss", ("loss", "mlm_logits_loss", "nsp_logits_loss")),
        ("accuracy", ("mlm_logits_mlm_accuracy", "nsp_logits_nsp_accuracy")),
    )
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for axis, (label, names) in zip(axes, panels):
        for name in names:
            for prefix, style in (("", "-"), ("val_", "o--")):
                points = [
                    (r["step"], r[prefix + name]) for r in records if prefix + name in r
                ]
                if points:
                    steps, values = zip(*points)
                    axis.plot(steps, values, style, label=(prefix or "train_") + name)
        axis.set_xlabel("step")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(png_path, dpi=120)
    plt.close(figure)
    return png_path
