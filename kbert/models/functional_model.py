"""FunctionalModel: the base of kbert's functional `keras.Model` subclasses."""

import keras


class FunctionalModel(keras.Model):
    """A functional model whose sublayers may be assigned before `__init__`.

    kbert models create their named layers first, wire the functional graph,
    then call `super().__init__(inputs, outputs)`. On the torch backend a
    `torch.nn.Module` refuses attributes before its `__init__`; since the
    functional graph already tracks every layer, plain assignment is safe.
    """

    def __setattr__(self, name, value):
        uninitialized = not hasattr(self, "_initialized")
        is_property = isinstance(getattr(type(self), name, None), property)
        if keras.backend.backend() == "torch" and (uninitialized or is_property):
            return object.__setattr__(self, name, value)
        return super().__setattr__(name, value)
