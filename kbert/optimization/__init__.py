"""Optimizers and learning-rate schedules as BERT trains with them."""

from kbert.optimization.optimizers import NO_WEIGHT_DECAY, bert_optimizer
from kbert.optimization.schedules import WarmupLinearDecay

__all__ = ["NO_WEIGHT_DECAY", "WarmupLinearDecay", "bert_optimizer"]
