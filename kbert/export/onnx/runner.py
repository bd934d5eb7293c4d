"""Runs an ONNX file on `onnxruntime` (CPU).

Takes and returns dicts of NumPy arrays keyed by input and output name. A
file with onnxruntime-extensions' custom ops (the `"string"` flavour's
tokenizer) runs with their library registered; its string inputs take 1-D
batches of `str`.
"""

import os

import numpy as np

from kbert.export.onnx.strings import DOMAIN, session_options


class OnnxRunner:
    """An `onnxruntime` CPU session for one ONNX file.

    Example:
    >>> OnnxRunner(onnx_file)(token_inputs)["logits"].shape
    (3, 2)
    >>> OnnxRunner(onnx_file)({"token_ids": [["a"]]})
    Traceback (most recent call last):
    ...
    ValueError: ONNX input 'token_ids' takes integers (tensor(int32)); got a <U1 array.
    """

    def __init__(self, path, num_threads=None):
        import onnxruntime  # lazy: a runtime loads only when an artifact is run

        def session(options):
            if num_threads:
                options.intra_op_num_threads = num_threads
            return onnxruntime.InferenceSession(
                os.fspath(path), options, providers=["CPUExecutionProvider"]
            )

        try:
            self.session = session(onnxruntime.SessionOptions())
        except Exception as error:  # onnxruntime's Fail: an op it does not know
            if DOMAIN not in str(error):
                raise
            # onnxruntime-extensions' ops (the string flavour's tokenizer).
            self.session = session(session_options())
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def __call__(self, feeds):
        types = {i.name: i.type for i in self.session.get_inputs()}
        converted = {}
        for name in self.input_names:
            if name not in feeds:
                raise ValueError(
                    f"The ONNX file takes inputs {self.input_names}; got {sorted(feeds)}."
                )
            if types[name] == "tensor(string)":
                converted[name] = _texts(name, feeds[name])
                continue
            value = np.asarray(feeds[name])
            if value.dtype.kind in "OSUV":
                raise ValueError(
                    f"ONNX input {name!r} takes integers ({types[name]}); got a "
                    f"{value.dtype} array."
                )
            if types[name] == "tensor(int32)":
                value = value.astype("int32")
            elif types[name] == "tensor(int64)":
                value = value.astype("int64")
            converted[name] = value
        values = self.session.run(self.output_names, converted)
        return dict(zip(self.output_names, values))

    def map(self, batches):
        """The outputs of each feed of `batches`, in order: one after another
        (the session's threads already share the cores)."""
        return [self(feeds) for feeds in batches]


def _texts(name, value):
    """A 1-D object array of `str` for a string input; `ValueError` naming
    the input otherwise.

    Example:
    >>> _texts("text", ["A fine film."])
    array(['A fine film.'], dtype=object)
    >>> _texts("text", [1, 2])
    Traceback (most recent call last):
    ...
    ValueError: ONNX input 'text' takes a 1-D batch of texts (str); got int at row 0.
    """
    if isinstance(value, (str, bytes)):
        raise ValueError(
            f"ONNX input {name!r} takes a 1-D batch of texts: wrap one text in a list."
        )
    array = np.asarray(value, dtype=object)
    if array.ndim != 1:
        raise ValueError(
            f"ONNX input {name!r} takes a 1-D batch of texts (str); got shape "
            f"{array.shape}."
        )
    for row, text in enumerate(array):
        if not isinstance(text, str):
            raise ValueError(
                f"ONNX input {name!r} takes a 1-D batch of texts (str); got "
                f"{type(text).__name__} at row {row}."
            )
    return array
