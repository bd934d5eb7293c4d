"""Classification metrics of a fine-tune: loss, confusion matrix, per-class
precision / recall / F1 (NumPy only; `tests/finetuning` checks them against
scikit-learn)."""

import numpy as np

from kbert.utils.tables import markdown_table


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of integer `labels` under `logits`.

    Example:
    >>> round(cross_entropy(np.zeros((2, 2)), [0, 1]), 4)
    0.6931
    """
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    labels = np.asarray(labels)
    return float(-np.mean(log_probabilities[np.arange(len(labels)), labels]))


def confusion_matrix(labels, predictions, num_classes):
    """`(num_classes, num_classes)` counts: row = true label, column = predicted.

    Example:
    >>> confusion_matrix([0, 1, 1], [0, 0, 1], 2)
    array([[1, 0],
           [1, 1]])
    """
    matrix = np.zeros((num_classes, num_classes), "int64")
    np.add.at(matrix, (np.asarray(labels), np.asarray(predictions)), 1)
    return matrix


def classification_report(matrix, names):
    """Per-class precision, recall, F1 and support, plus macro averages.

    A class never predicted (or never present) gets 0 precision (recall),
    as scikit-learn's `zero_division=0`.

    Example:
    >>> report = classification_report(np.array([[1, 0], [1, 1]]), ["neg", "pos"])
    >>> report["classes"]["neg"]["precision"], report["accuracy"]
    (0.5, 0.6667)
    """
    matrix = np.asarray(matrix)
    correct = np.diag(matrix).astype("float64")
    predicted, support = matrix.sum(0), matrix.sum(1)
    precision = np.divide(
        correct, predicted, out=np.zeros_like(correct), where=predicted > 0
    )
    recall = np.divide(correct, support, out=np.zeros_like(correct), where=support > 0)
    total = precision + recall
    f1 = np.divide(
        2 * precision * recall, total, out=np.zeros_like(correct), where=total > 0
    )
    classes = {
        str(name): {
            "precision": round(float(p), 4),
            "recall": round(float(r), 4),
            "f1": round(float(f), 4),
            "support": int(s),
        }
        for name, p, r, f, s in zip(names, precision, recall, f1, support)
    }
    return {
        "classes": classes,
        "macro": {
            "precision": round(float(precision.mean()), 4),
            "recall": round(float(recall.mean()), 4),
            "f1": round(float(f1.mean()), 4),
            "support": int(support.sum()),
        },
        "accuracy": round(float(correct.sum() / max(1, support.sum())), 4),
    }


def report_table(report):
    """The report as a Markdown table, one row per class and a macro row.

    Example:
    >>> print(report_table(classification_report(np.array([[1, 0], [1, 1]]), ["a", "b"])))
    | label     | precision | recall | F1    | support |
    |-----------|-----------|--------|-------|---------|
    | a         | 0.500     | 1.000  | 0.667 | 1       |
    | b         | 1.000     | 0.500  | 0.667 | 2       |
    | macro avg | 0.750     | 0.750  | 0.667 | 3       |
    """
    rows = [
        [
            name,
            f"{v['precision']:.3f}",
            f"{v['recall']:.3f}",
            f"{v['f1']:.3f}",
            v["support"],
        ]
        for name, v in [*report["classes"].items(), ("macro avg", report["macro"])]
    ]
    return markdown_table(["label", "precision", "recall", "F1", "support"], rows)
