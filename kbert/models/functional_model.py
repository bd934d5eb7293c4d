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

    def zero_grad(self, set_to_none=True):
        # Keras' torch trainer clears gradients with `torch.nn.Module.zero_grad`,
        # which only reaches registered parameters; the layers assigned above are
        # not registered, so gradients would add up across steps. Clear every
        # trainable variable's gradient instead (a no-op on other backends).
        for variable in self.trainable_variables:
            value = variable.value
            if getattr(value, "grad", None) is not None:
                if set_to_none:
                    value.grad = None
                else:
                    value.grad.zero_()
