"""JaxStateRestoringModel: a failed `fit`/`evaluate`/`predict` on JAX leaves
the model usable.

Keras' JAX trainer detaches every variable's value while it runs (the state
travels through a stateless function) and attaches the values back only at
the end. An error in between (a missing input, a wrong shape) leaves the
variables empty: every later call fails with "'NoneType' object is not
callable" until the model is rebuilt. This mixin puts the values back.
"""

import contextlib

import keras


def _all_variables(model):
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    variables += list(getattr(model, "metrics_variables", []))
    return variables


@contextlib.contextmanager
def restored_on_failure(model):
    """On JAX, a `with` block whose error leaves `model` as it was before.

    Values a failed `fit` already trained are kept (Keras' last synced
    state); a variable still detached gets its value from before the block.

    Example:
    >>> with restored_on_failure(backbone):
    ...     pass
    """
    if keras.backend.backend() != "jax":
        yield
        return
    saved = [(variable, variable._value) for variable in _all_variables(model)]
    try:
        yield
    except BaseException:
        if getattr(model, "_jax_state", None):
            try:
                model.jax_state_sync()
            except Exception:  # noqa: BLE001 - a half-built state: fall back to saved
                pass
        model._jax_state = None
        for variable, value in saved:
            if variable._value is None and value is not None:
                variable._value = value
        raise


class JaxStateRestoringModel:
    """Mixin: `fit`, `evaluate` and `predict` run in `restored_on_failure`."""

    def fit(self, *args, **kwargs):
        with restored_on_failure(self):
            return super().fit(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        with restored_on_failure(self):
            return super().evaluate(*args, **kwargs)

    def predict(self, *args, **kwargs):
        with restored_on_failure(self):
            return super().predict(*args, **kwargs)
