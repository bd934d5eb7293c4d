"""Runs an ONNX file or an OpenVINO IR on OpenVINO's CPU plugin, which picks
its own precision (bfloat16 on CPUs with AVX512_BF16 or AMX, float32
otherwise); `precision="f32"` forces float32, matching onnxruntime's outputs.

Takes and returns dicts of NumPy arrays keyed by input and output name.
"""

import os

import numpy as np


def openvino_version():
    """The installed OpenVINO release, without its build suffix.

    Example:
    >>> openvino_version().count(".")
    2
    """
    import openvino  # lazy: a runtime loads only when an artifact is run

    return openvino.__version__.split("-")[0]


class OpenVinoRunner:
    """One ONNX (or OpenVINO IR `.xml`) model compiled for OpenVINO's CPU plugin.

    Args:
        path: the `.onnx` or `.xml` file.
        precision: None (the plugin's default for this CPU) or an
            `INFERENCE_PRECISION_HINT` value such as `"f32"` or `"bf16"`.
        num_threads: `INFERENCE_NUM_THREADS` (default: the plugin's).

    Example:
    >>> runner = OpenVinoRunner(onnx_file, precision="f32")
    >>> runner.precision, runner(token_inputs)["logits"].shape
    ('f32', (3, 2))
    """

    def __init__(self, path, precision=None, num_threads=None):
        import openvino  # lazy: a runtime loads only when an artifact is run

        core = openvino.Core()
        config = {}
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        self.compiled = core.compile_model(core.read_model(os.fspath(path)), "CPU", config)
        self.precision = self.compiled.get_property(
            "INFERENCE_PRECISION_HINT"
        ).get_type_name()
        self.request = self.compiled.create_infer_request()
        self.inputs = list(self.compiled.inputs)
        self.output_names = [o.get_any_name() for o in self.compiled.outputs]

    def describe(self):
        """`"OpenVINO 2026.4.1 CPU (bf16)"`: runtime and the precision it runs."""
        return f"OpenVINO {openvino_version()} CPU ({self.precision})"

    def _feed_name(self, port, feeds, position):
        """The feed for one input: a tensor can carry several names (an ONNX
        input and the Cast that follows it), one of which is the input's."""
        for name in port.get_names():
            if name in feeds:
                return name
        return list(feeds)[position]

    def __call__(self, feeds):
        inputs = {}
        for position, port in enumerate(self.inputs):
            name = self._feed_name(port, feeds, position)
            dtype = port.get_element_type().to_dtype()
            inputs[port] = np.ascontiguousarray(np.asarray(feeds[name]).astype(dtype))
        results = self.request.infer(inputs)
        return {
            name: np.array(results[port])  # a copy: the request reuses its buffers
            for name, port in zip(self.output_names, self.compiled.outputs)
        }
