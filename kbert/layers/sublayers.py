"""Running a sublayer inside its parent's `call`, as Keras would.

kbert's layers call their Dense and Embedding sublayers through `call()`, not
`__call__`: the parent's `__call__` has already cast the inputs, opened the
autocast scope and resolved `training`, and skipping a dozen nested
`__call__`s per transformer layer is most of the torch backend's small-batch
Python overhead. But `call()` is the float path: Keras runs a quantized
layer through `quantized_call()`, which reads the int8/int4 kernel with its
scales. Calling `call()` on a quantized layer computes with the raw integer
kernel, which is how `model.quantize("int8")` once flipped half of a
classifier's predictions without an error.

Example:
>>> dense = keras.layers.Dense(2, kernel_initializer="ones"); dense.build((None, 2))
>>> dense.quantize("int8")
>>> x = np.array([[1.0, 2.0]], "float32")
>>> np.allclose(keras.ops.convert_to_numpy(call_sublayer(dense, x)), 3.0, atol=0.05)
True
"""


def call_sublayer(layer, *args, **kwargs):
    """`layer.call(...)`, or `layer.quantized_call(...)` when it is quantized."""
    if layer.quantization_mode is not None:
        return layer.quantized_call(*args, **kwargs)
    return layer.call(*args, **kwargs)
