"""Runs an ONNX file or an OpenVINO IR on OpenVINO's CPU plugin, which picks
its own precision (bfloat16 on CPUs with AVX512_BF16 or AMX, float32
otherwise); `precision="f32"` forces float32, matching onnxruntime's outputs.

Takes and returns dicts of NumPy arrays keyed by input and output name. An IR
of the `"string"` flavour (the tokenizer inside, `kbert.export.openvino.strings`)
takes texts: a list or array of `str` per string input; the openvino-tokenizers
extension is loaded for it (and only for it).
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
        path: the `.onnx` or `.xml` file, or a token-id `openvino.Model`.
        precision: None (the plugin's default for this CPU) or an
            `INFERENCE_PRECISION_HINT` value such as `"f32"` or `"bf16"`.
        num_threads: `INFERENCE_NUM_THREADS` (default: the plugin's).
        throughput: compile for throughput (`PERFORMANCE_HINT="THROUGHPUT"`:
            the cores split into streams, each running its own request), for
            `map` over many batches; a single call is no faster.

    `map(batches)` runs a sequence of feeds and returns their outputs in
    order: one request after another, or, with `throughput=True`, as many
    at once as the plugin has streams (its optimal number of requests). On an
    Intel Xeon with AMX (2 cores: 2 streams of one core) that ran the demo
    classifier's and all-MiniLM-L6-v2's IRs 1.05-1.52x as fast as one
    request at a time (2026-12-07, export/README.md; tested in
    tests/export/test_openvino_strings.py).

    Example:
    >>> runner = OpenVinoRunner(onnx_file, precision="f32")
    >>> runner.precision, runner(token_inputs)["logits"].shape
    ('f32', (3, 2))
    >>> [out["logits"].shape for out in runner.map([token_inputs, token_inputs])]
    [(3, 2), (3, 2)]
    """

    def __init__(self, path, precision=None, num_threads=None, throughput=False):
        import openvino  # lazy: a runtime loads only when an artifact is run

        in_memory = isinstance(path, openvino.Model)
        if not in_memory and takes_strings(path):
            _load_tokenizer_extension(path)
        core = openvino.Core()
        config = {}
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        if throughput:
            config["PERFORMANCE_HINT"] = "THROUGHPUT"
        self.throughput = bool(throughput)
        model = path if in_memory else core.read_model(os.fspath(path))
        # The model's names: compiling can merge an output's tensor with the
        # one it copies (a string IR's `token_ids`), adding that one's names.
        self.output_names = [port.get_any_name() for port in model.outputs]
        self.compiled = core.compile_model(model, "CPU", config)
        self.precision = self.compiled.get_property(
            "INFERENCE_PRECISION_HINT"
        ).get_type_name()
        self.request = self.compiled.create_infer_request()
        self.inputs = list(self.compiled.inputs)
        self.text_inputs = [
            port.get_any_name()
            for port in self.inputs
            if port.get_element_type() == openvino.Type.string
        ]

    def describe(self):
        """`"OpenVINO 2026.4.1 CPU (bf16)"`: runtime and the precision it runs
        (and `, 2 streams` when compiled for throughput)."""
        streams = ""
        if self.throughput:
            streams = f", {self.compiled.get_property('NUM_STREAMS')} streams"
        return f"OpenVINO {openvino_version()} CPU ({self.precision}{streams})"

    def _feed_name(self, port, feeds, position):
        """The feed for one input: a tensor can carry several names (an ONNX
        input and the Cast that follows it), one of which is the input's."""
        for name in port.get_names():
            if name in feeds:
                return name
        return list(feeds)[position]

    def _inputs(self, feeds):
        inputs = {}
        for position, port in enumerate(self.inputs):
            name = self._feed_name(port, feeds, position)
            if port.get_any_name() in self.text_inputs:
                inputs[port] = _texts(feeds[name], port.get_any_name())
                continue
            dtype = port.get_element_type().to_dtype()
            inputs[port] = np.ascontiguousarray(np.asarray(feeds[name]).astype(dtype))
        return inputs

    def _outputs(self, request):
        return {
            name: np.array(request.get_tensor(port).data)  # a copy: requests reuse buffers
            for name, port in zip(self.output_names, self.compiled.outputs)
        }

    def __call__(self, feeds):
        self.request.infer(self._inputs(feeds))
        return self._outputs(self.request)

    def map(self, batches):
        """The outputs of each feed of `batches`, in order (see the class)."""
        batches = list(batches)
        if not self.throughput:
            return [self(feeds) for feeds in batches]
        # Requests taken in turn, each waited for before its next batch: no
        # Python callback runs on OpenVINO's threads (with `AsyncInferQueue`'s
        # callback, a test process that also held TensorFlow aborted once in
        # an OpenVINO thread; not reproduced).
        count = self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
        requests = [self.request] + [
            self.compiled.create_infer_request() for _ in range(count - 1)
        ]
        results = [None] * len(batches)
        running = {}  # request slot -> index of the batch it runs
        for index, feeds in enumerate(batches):
            slot = index % len(requests)
            if slot in running:
                requests[slot].wait()
                results[running[slot]] = self._outputs(requests[slot])
            requests[slot].start_async(self._inputs(feeds))
            running[slot] = index
        for slot, index in running.items():
            requests[slot].wait()
            results[index] = self._outputs(requests[slot])
        return results


def takes_strings(path):
    """Whether the IR `path` has a string input (the `"string"` flavour): its
    `.xml` declares a string Parameter. An ONNX file never does here."""
    path = os.fspath(path)
    if not path.endswith(".xml"):
        return False
    with open(path, encoding="utf-8", errors="replace") as file:
        return 'element_type="string"' in file.read()


def _load_tokenizer_extension(path):
    """Registers openvino-tokenizers' ops with OpenVINO (the string flavour's
    tokenizer runs on them)."""
    try:
        import openvino_tokenizers  # noqa: F401  # lazy: registers the tokenizer ops
    except ImportError as error:
        raise ImportError(
            f"{path} takes strings: its tokenizer runs on the openvino-tokenizers "
            "extension. pip install openvino-tokenizers (the release of your "
            f"openvino). ({error})"
        ) from error


def _texts(value, name):
    """The feed of a string input: a 1-D array of `str`; `ValueError` naming the
    input for anything else (token ids fed to a string IR, say).

    Example:
    >>> _texts(["A fine film.", "Dull."], "text").shape
    (2,)
    >>> _texts(np.array([[2, 7, 3]]), "text")
    Traceback (most recent call last):
    ...
    ValueError: Input 'text' takes a batch of texts (a list of str); got an int64 array ...
    """
    if isinstance(value, str):
        raise ValueError(
            f"Input {name!r} takes a batch of texts (a list of str); got one str: "
            "wrap it in a list."
        )
    array = np.asarray(value, dtype=object) if isinstance(value, (list, tuple)) else value
    array = np.asarray(array)
    if array.ndim != 1 or not all(isinstance(text, str) for text in array.tolist()):
        kind = f"an {array.dtype} array" if array.dtype != object else "an object array"
        raise ValueError(
            f"Input {name!r} takes a batch of texts (a list of str); got {kind} of "
            f"shape {array.shape}."
        )
    return np.array(array.tolist(), dtype=np.str_)
