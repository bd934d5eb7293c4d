"""The fine-tuning recipe: one set of hyper-parameters, applied identically.

`benchmarks/end_to_end.py --finetune` runs the same recipe with HF
transformers (dynamic padding, as HF users train), so everything that
decides the result lives here: the data order (one seeded permutation per
epoch, shared by both), the schedule, the optimizer.
"""

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class FinetuneRecipe:
    """Hyper-parameters of a sequence-classification fine-tune.

    Example:
    >>> recipe = FinetuneRecipe(epochs=2, learning_rate=3e-5)
    >>> recipe.total_steps(10246)
    642
    """

    preset: str = "all_minilm_l6_v2"
    sequence_length: int = 64
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    epochs: int = 1
    seed: int = 0
    # The tokenizer's normalization: "exact" (the checkpoint's), or the one
    # of the runtime the model will be exported to ("mediapipe", "tflite").
    normalization: str = "exact"
    # LoRA rank on query and value (`BertBackbone.enable_lora`); 0 trains every weight.
    lora_rank: int = 0

    def steps_per_epoch(self, num_examples):
        return math.ceil(num_examples / self.batch_size)

    def total_steps(self, num_examples):
        return self.steps_per_epoch(num_examples) * self.epochs

    def warmup_steps(self, num_examples):
        return int(self.warmup_fraction * self.total_steps(num_examples))

    def epoch_order(self, num_examples, epoch):
        """The order examples are seen in `epoch` (same for kbert and HF)."""
        return np.random.RandomState(self.seed + epoch).permutation(num_examples)
