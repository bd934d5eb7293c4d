"""Fine-tune a `BertClassifier` on raw texts with a `FinetuneRecipe`."""

import time

import keras
import numpy as np

from kbert.distributed import cluster, tf_multi_worker
from kbert.finetuning.metrics import classification_report, confusion_matrix, cross_entropy
from kbert.finetuning.recipe import FinetuneRecipe
from kbert.models.classifier import BertClassifier
from kbert.optimization.optimizers import bert_optimizer


class LossHistory(keras.callbacks.Callback):
    """Records the running training loss after every step and, per epoch,
    the validation loss at the step it was measured (for the curves)."""

    def __init__(self):
        super().__init__()
        self.steps, self.losses = [], []
        self.validation_steps, self.validation_losses = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(len(self.steps) + 1)
        self.losses.append(float(logs["loss"]))


def classifier_optimizer(recipe, num_examples):
    """AdamW with linear warm-up and decay, no decay on LayerNorm and biases."""
    return bert_optimizer(
        total_steps=recipe.total_steps(num_examples),
        learning_rate=recipe.learning_rate,
        warmup_steps=recipe.warmup_steps(num_examples),
        weight_decay=recipe.weight_decay,
        epsilon=1e-8,
    )


def build_classifier(recipe, num_classes, num_examples, id2label=None, pair=False):
    """`BertClassifier.from_preset(recipe.preset)` compiled for the recipe."""
    keras.utils.set_random_seed(recipe.seed)
    model = BertClassifier.from_preset(
        recipe.preset,
        num_classes=num_classes,
        id2label=id2label,
        sequence_length=recipe.sequence_length,
        normalization=recipe.normalization,
    )
    if model.preprocessor is None:
        raise ValueError(f"Preset {recipe.preset!r} has no vocabulary to tokenize texts.")
    if recipe.lora_rank:
        model.backbone.enable_lora(recipe.lora_rank)
    model.compile(optimizer=classifier_optimizer(recipe, num_examples))
    return model


def _take(x, index):
    if isinstance(x, tuple):
        return tuple(_take(part, index) for part in x)
    return [x[i] for i in index]


def long_text_counts(model, x):
    """How many texts of `x` (texts, or a tuple of two lists) the model's
    `sequence_length` cuts: `{"truncated", "total", "longest"}` (tokens,
    special tokens included).

    Example:
    >>> long_text_counts(classifier, ["A fine film.", "fine " * 300])["truncated"]
    1
    """
    preprocessor = model.preprocessor
    segments, _ = preprocessor._segments(x)
    lengths = len(segments) + 1
    for segment in segments:
        lengths += preprocessor.tokenizer.tokenize_tensor(segment).row_lengths().numpy()
    lengths = np.asarray(lengths).reshape(-1)
    return {
        "truncated": int(np.sum(lengths > preprocessor.sequence_length)),
        "total": len(lengths),
        "longest": int(lengths.max(initial=0)),
    }


def evaluate_classifier(
    model, x, labels, batch_size=64, long_texts="truncate", stride=None
):
    """`(metrics, predictions)` of a single-label classifier on `(x, labels)`.

    `metrics`: cross-entropy `loss`, `accuracy` and `macro_f1`; with
    `long_texts="windows"`, of each text's windows' mean logits.

    Example:
    >>> metrics, predictions = evaluate_classifier(classifier, ["A fine film."], [1])
    >>> sorted(metrics), predictions.shape
    (['accuracy', 'loss', 'macro_f1'], (1,))
    """
    labels = np.asarray(labels)
    logits = model.predict(
        x, batch_size=batch_size, verbose=0, long_texts=long_texts, stride=stride
    )
    predictions = np.argmax(logits, axis=-1)
    matrix = confusion_matrix(labels, predictions, logits.shape[-1])
    report = classification_report(matrix, range(logits.shape[-1]))
    metrics = {
        "loss": cross_entropy(logits, labels),
        "accuracy": float(np.mean(predictions == labels)),
        "macro_f1": report["macro"]["f1"],
    }
    return metrics, predictions


def _shard(model, x, y, order, batch_size, num_shards, shard_index):
    """This process's rows of every global batch, preprocessed to full length:
    length buckets are chosen per process, and all processes' parts of a
    global batch must have one shape."""
    rows = cluster.shard_rows(order, batch_size, num_shards, shard_index)
    data = model.preprocess_samples(_take(x, rows), y[rows])
    data = keras.tree.map_structure(np.asarray, data)
    features, y, _ = keras.utils.unpack_x_y_sample_weight(data)
    return features, y


def _worker_batches(strategy, x, y, batch_size):
    """A worker's preprocessed share of each global batch, as `fit` input."""
    import tensorflow as tf  # lazy: a multi-worker strategy is TensorFlow's

    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)
    return tf_multi_worker.per_worker_dataset(strategy, batches)


def train_classifier(
    model,
    recipe,
    train,
    validation=None,
    verbose=1,
    shard=None,
    long_texts="truncate",
    stride=None,
):
    """Runs `recipe.epochs` epochs of `fit`, each in the recipe's data order.

    `train` and `validation` are `(x, labels)`; x is a list of texts or a
    tuple of two lists (pairs). After each epoch the validation set (if any)
    is evaluated (`evaluate_classifier`: `val_loss`, `val_accuracy`,
    `val_macro_f1` in the history) and, with `verbose`, one line per epoch is
    printed. Returns `(history, loss_curve, seconds)`.

    In a multi-process job (`kbert.distributed.cluster`: JAX's `DataParallel`, or a
    model built in a TensorFlow `MultiWorkerMirroredStrategy` scope; `shard`
    overrides its `(num_shards, shard_index)`), each process preprocesses and feeds only
    its slice of every global batch of `recipe.batch_size`, so the job sees
    the one-process batches; a last partial batch is left out.

    `long_texts="windows"` trains on every window of each text (one process
    only) and validates on each text's mean logits.
    """
    num_shards, shard_index = shard or cluster.input_shard()
    if long_texts != "truncate" and num_shards > 1:
        raise ValueError(
            f"long_texts={long_texts!r} trains in one process only; this job has "
            f"{num_shards}."
        )
    strategy = getattr(model, "distribute_strategy", None)
    x, y = train
    y = np.asarray(y)
    curve = LossHistory()
    history = {}
    start = time.perf_counter()
    for epoch in range(recipe.epochs):
        order = recipe.epoch_order(len(y), epoch)
        if num_shards > 1:
            epoch_x, epoch_y = _shard(
                model, x, y, order, recipe.batch_size, num_shards, shard_index
            )
        else:
            epoch_x, epoch_y = _take(x, order), y[order]
        fed = dict(x=epoch_x, y=epoch_y, batch_size=recipe.batch_size // num_shards)
        if long_texts != "truncate":
            fed.update(long_texts=long_texts, stride=stride)
        if tf_multi_worker.is_multi_worker(strategy):
            fed = dict(x=_worker_batches(strategy, epoch_x, epoch_y, fed["batch_size"]))
        result = model.fit(
            **fed,
            shuffle=False,
            epochs=epoch + 1,
            initial_epoch=epoch,
            callbacks=[curve],
            verbose=verbose,
        )
        for key, values in result.history.items():
            history.setdefault(key, []).extend(values)
        loss = history["loss"][-1]
        line = f"Epoch {epoch + 1}/{recipe.epochs} done: training loss {loss:.4f}"
        if validation is not None:
            metrics, _ = evaluate_classifier(
                model, *validation, long_texts=long_texts, stride=stride
            )
            for key, value in metrics.items():
                history.setdefault(f"val_{key}", []).append(value)
            curve.validation_steps.append(len(curve.steps))
            curve.validation_losses.append(metrics["loss"])
            line += (
                f"; validation loss {metrics['loss']:.4f}, accuracy "
                f"{metrics['accuracy']:.4f}, macro F1 {metrics['macro_f1']:.4f}"
            )
        if verbose:
            print(line, flush=True)
    return history, curve, time.perf_counter() - start


__all__ = [
    "FinetuneRecipe",
    "build_classifier",
    "train_classifier",
    "evaluate_classifier",
    "long_text_counts",
    "LossHistory",
]
