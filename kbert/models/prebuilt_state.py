"""PrebuiltStateModel: on TensorFlow, `fit` and `evaluate` trace their step once.

Without a distribution strategy, Keras' TensorFlow trainer leaves the
optimizer's slots and the metrics' state to be created inside the first
trace of the step; a `tf.function` that creates variables is traced a second
time, so the first `fit` of a model traced its whole training step twice
(a tiny classifier's first 2-epoch fit: 5.5 s, 4.0 s with the state made
first; measured on this project's 2-core Xeon). This mixin makes that state
from the dataset's element spec before the step is traced, reading no batch
(a batch read would run a raw dataset's truncation count).
"""

import keras


class PrebuiltStateModel:
    """Mixin: Keras' symbolic build, from the batches' spec, on TensorFlow too."""

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        spec = _element_spec(iterator) if self._distribute_strategy is None else None
        if spec is None:
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        self._symbolic_build(data_batch=spec)


def _element_spec(iterator):
    """The dense batch spec of a TensorFlow epoch iterator, or None."""
    if iterator is None or keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf  # lazy: the TensorFlow backend, loaded already

    # The dataset the iterator built already (asking the data adapter again
    # would copy in-memory arrays into a new dataset).
    dataset = getattr(iterator, "_distributed_dataset", None)
    spec = getattr(dataset, "element_spec", None)
    if spec is None or not all(isinstance(s, tf.TensorSpec) for s in tf.nest.flatten(spec)):
        return None
    return spec
