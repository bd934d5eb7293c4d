"""Fine-tune a `BertClassifier` on raw texts with a `FinetuneRecipe`."""

import time

import keras
import numpy as np

from kbert.finetuning.recipe import FinetuneRecipe
from kbert.models.classifier import BertClassifier
from kbert.optimization.optimizers import bert_optimizer


class LossHistory(keras.callbacks.Callback):
    """Records the running training loss after every step (for the curve)."""

    def __init__(self):
        super().__init__()
        self.steps, self.losses = [], []

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
    )
    if model.preprocessor is None:
        raise ValueError(f"Preset {recipe.preset!r} has no vocabulary to tokenize texts.")
    model.compile(optimizer=classifier_optimizer(recipe, num_examples))
    return model


def _take(x, index):
    if isinstance(x, tuple):
        return tuple(_take(part, index) for part in x)
    return [x[i] for i in index]


def train_classifier(model, recipe, train, validation=None, verbose=1):
    """Runs `recipe.epochs` epochs of `fit`, each in the recipe's data order.

    `train` and `validation` are `(x, labels)`; x is a list of texts or a
    tuple of two lists (pairs). Returns `(history, loss_curve, seconds)`.
    """
    x, y = train
    y = np.asarray(y)
    curve = LossHistory()
    history = {}
    start = time.perf_counter()
    for epoch in range(recipe.epochs):
        order = recipe.epoch_order(len(y), epoch)
        result = model.fit(
            _take(x, order),
            y[order],
            batch_size=recipe.batch_size,
            shuffle=False,
            epochs=epoch + 1,
            initial_epoch=epoch,
            validation_data=None
            if validation is None
            else (validation[0], np.asarray(validation[1])),
            callbacks=[curve],
            verbose=verbose,
        )
        for key, values in result.history.items():
            history.setdefault(key, []).extend(values)
    return history, curve, time.perf_counter() - start


__all__ = ["FinetuneRecipe", "build_classifier", "train_classifier", "LossHistory"]
