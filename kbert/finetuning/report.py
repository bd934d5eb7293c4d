"""The training-curve PNG of a fine-tune."""

import os


def save_training_curve(curve, path, title="Training loss"):
    """Writes the per-step running training loss as a PNG."""
    import matplotlib  # lazy: matplotlib is optional

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is optional

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
