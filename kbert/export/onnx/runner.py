"""Runs an ONNX file on `onnxruntime` (CPU).

Takes and returns dicts of NumPy arrays keyed by input and output name.
"""

import os

import numpy as np


class OnnxRunner:
    """An `onnxruntime` CPU session for one ONNX file.

    Example:
    >>> OnnxRunner(onnx_file)(token_inputs)["logits"].shape
    (3, 2)
    """

    def __init__(self, path, num_threads=None):
        import onnxruntime  # lazy: a runtime loads only when an artifact is run

        options = onnxruntime.SessionOptions()
        if num_threads:
            options.intra_op_num_threads = num_threads
        self.session = onnxruntime.InferenceSession(
            os.fspath(path), options, providers=["CPUExecutionProvider"]
        )
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def __call__(self, feeds):
        types = {i.name: i.type for i in self.session.get_inputs()}
        converted = {}
        for name in self.input_names:
            value = np.asarray(feeds[name])
            if types[name] == "tensor(int32)":
                value = value.astype("int32")
            elif types[name] == "tensor(int64)":
                value = value.astype("int64")
            converted[name] = value
        values = self.session.run(self.output_names, converted)
        return dict(zip(self.output_names, values))
