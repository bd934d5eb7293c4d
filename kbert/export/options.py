"""The exporters' choices and defaults, in plain Python.

The exporters and `kbert export` both read them from here, so the command
line declares its flags (and `--help` answers) without loading Keras.
"""

# TFLite: token ids in; strings in (tokenizer in the graph); MediaPipe Tasks.
FLAVOURS = ("string", "token_ids", "mediapipe")
TFLITE_QUANTIZATIONS = (None, "float16", "dynamic_int8", "int8")
ONNX_QUANTIZATIONS = (None, "dynamic_int8", "int8", "float16")
DEFAULT_OPSET = 18
# A quantized artifact must predict as the Keras model does on this share of
# the held-out reviews.
DEFAULT_MIN_AGREEMENT = 0.99
