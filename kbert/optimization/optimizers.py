"""AdamW or LAMB with BERT's weight-decay rules, for pretraining and fine-tuning."""

import keras

from kbert.optimization.in_place_adamw import InPlaceAdamW
from kbert.optimization.schedules import WarmupLinearDecay

# LayerNorm (`gamma`, `beta`) and every bias, the MLM `output_bias` included,
# are not decayed (as in the original BERT optimizer).
NO_WEIGHT_DECAY = ("bias", "gamma", "beta")


def bert_optimizer(
    total_steps=None,
    learning_rate=1e-4,
    warmup_steps=10000,
    optimizer="adamw",
    weight_decay=0.01,
    global_clipnorm=1.0,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    mixed_float16=False,
):
    """AdamW (original BERT) or LAMB (large-batch BERT), warm-up/decay schedule,
    global-norm gradient clipping, no decay on LayerNorm and biases.

    `total_steps=None` keeps the learning rate constant (no schedule).

    `mixed_float16=True` wraps it in a `LossScaleOptimizer` (not needed for
    bfloat16).

    Example:
    >>> optimizer = bert_optimizer(total_steps=100000, warmup_steps=1000)
    >>> pretrainer = kbert.BertPretrainer(backbone, compile=False)
    >>> pretrainer.compile(optimizer=optimizer)
    """
    schedule = learning_rate
    if total_steps is not None:
        warmup_steps = min(warmup_steps, total_steps)
        schedule = WarmupLinearDecay(learning_rate, warmup_steps, total_steps)
    classes = {"adamw": InPlaceAdamW, "lamb": keras.optimizers.Lamb}
    if optimizer not in classes:
        raise ValueError(f"optimizer must be one of {sorted(classes)}; got {optimizer!r}.")
    result = classes[optimizer](
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
    )
    result.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    if mixed_float16:
        result = keras.optimizers.LossScaleOptimizer(result)
    return result
