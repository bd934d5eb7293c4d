"""Pre- and post-processing around the task heads (alignment, windows, decoding).

Plain Python / NumPy, plus TensorFlow ops (imported lazily) where the work
runs inside `tf.data`. Nothing here imports `kbert.models`.
"""

from kbert.tasks.bio import bio_to_spans, word_offsets
from kbert.tasks.token_accuracy import TokenAccuracy

__all__ = ["TokenAccuracy", "bio_to_spans", "word_offsets"]
