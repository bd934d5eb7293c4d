"""int8 activations whose matmul runs on the float kernels of TensorFlow and PyTorch.

A Dense with int8 activations (`quantize("int8", calibration_texts=...)`,
or a Keras `Int8QuantizationConfig`) multiplies int8 inputs by its int8
kernel. Keras computes that in int32, which TensorFlow and PyTorch run on
CPU without their BLAS: a 4096x384 by 384x1536 Dense took 118 ms on
TensorFlow and 396 ms on PyTorch against 22 and 52 ms in float32 (one
thread, Intel Xeon with AMX, 2026-12-06, `keras.layers.Dense` with and
without `quantize("int8")`); on JAX, XLA's int8 dot ran as fast as float.
`FloatCarriedQuantizer` quantizes exactly as Keras' `AbsMaxQuantizer` and
hands the int8 values on as float32, so the matmul runs in float32 against
the kernel cast to float32: every product and sum of int8 values is an
integer that float32 holds exactly up to 2**24, which a row of
`hidden_dim` int8 products stays under (384 x 127 x 127 = 6.2e6), so the
outputs equal Keras' int32 ones bit for bit there and to float32 rounding
beyond.

Example:
>>> dense = keras.layers.Dense(3)
>>> dense.build((None, 4))
>>> dense.quantize("int8")
>>> x = np.arange(8, dtype="float32").reshape(2, 4)
>>> keras_int32 = keras.ops.convert_to_numpy(dense(x))
>>> use_float_matmuls(dense)
>>> bool(np.array_equal(keras.ops.convert_to_numpy(dense(x)), keras_int32))
True
"""

import keras


class FloatCarriedQuantizer(keras.quantizers.AbsMaxQuantizer):
    """`AbsMaxQuantizer` (int8) whose quantized values come out as float32."""

    def __call__(self, x, axis=None, to_numpy=False):
        values, scale = super().__call__(x, axis=axis, to_numpy=to_numpy)
        return keras.ops.cast(values, "float32"), scale


def use_float_matmuls(layer):
    """Gives `layer` (a quantized Dense) a `FloatCarriedQuantizer` in place of
    Keras' int8 `AbsMaxQuantizer` of its inputs, on TensorFlow and PyTorch;
    leaves float activations, other quantizers and JAX as they are."""
    quantizer = getattr(layer, "inputs_quantizer", None)
    if (
        keras.backend.backend() in ("tensorflow", "torch")
        and type(quantizer) is keras.quantizers.AbsMaxQuantizer
        and quantizer.output_dtype == "int8"
    ):
        layer.inputs_quantizer = FloatCarriedQuantizer(
            axis=quantizer.axis,
            value_range=quantizer.value_range,
            epsilon=quantizer.epsilon,
        )
