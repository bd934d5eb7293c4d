"""The BERT learning-rate schedule: linear warm-up, then linear decay."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Rises linearly from 0 to `peak_learning_rate` over `warmup_steps`, then
    falls linearly to `end_learning_rate` at `total_steps` and stays there.

    As HF `get_linear_schedule_with_warmup`; the original BERT decays from
    step 0 instead of from the end of warm-up, a small dip at the peak.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, warmup_steps=100, total_steps=1000)
    >>> [round(float(schedule(step)), 8) for step in (50, 100, 550)]
    [5e-05, 0.0001, 5e-05]
    >>> optimizer = keras.optimizers.AdamW(learning_rate=schedule)
    """

    def __init__(
        self, peak_learning_rate, warmup_steps, total_steps, end_learning_rate=0.0
    ):
        if total_steps <= 0 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                "Need 0 <= warmup_steps <= total_steps and total_steps > 0; got "
                f"warmup_steps={warmup_steps}, total_steps={total_steps}."
            )
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.end_learning_rate = float(end_learning_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak, end = self.peak_learning_rate, self.end_learning_rate
        warmup = peak * step / max(self.warmup_steps, 1)
        remaining = (self.total_steps - step) / max(self.total_steps - self.warmup_steps, 1)
        decay = end + (peak - end) * ops.clip(remaining, 0.0, 1.0)
        return ops.where(step < self.warmup_steps, warmup, decay)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "end_learning_rate": self.end_learning_rate,
        }
