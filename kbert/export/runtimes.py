"""Run an exported artifact on the runtime it was made for.

- SavedModel: a fresh Python process importing only `tensorflow` and
  `tensorflow_text`, as TF Serving runs it (`serving_process.py`);
- TFLite: `ai_edge_litert`'s interpreter, with tensorflow-text's TFLite
  registrar only when the model holds custom ops;
- ONNX: `onnxruntime` on CPU;
- ONNX or OpenVINO IR: OpenVINO's CPU plugin, which picks its own precision
  (bfloat16 on CPUs with AVX512_BF16 or AMX, float32 otherwise);
  `precision="f32"` forces float32, matching onnxruntime's outputs;
- MediaPipe: `mediapipe.tasks.python.text.TextClassifier`.

Every runner takes and returns dicts of NumPy arrays keyed by input and
output name.
"""

import json
import os
import time

import numpy as np

from kbert.utils.child_process import run_child
from kbert.utils.owned_temps import work_directory

SERVING_SCRIPT = os.path.join(os.path.dirname(__file__), "serving_process.py")


def _encode(value):
    value = np.asarray(value)
    if value.dtype.kind in "UO":
        return np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(value).astype("S")
    return value


def run_saved_model(directory, runs, repeats=0):
    """Runs signatures in a fresh TensorFlow-only process.

    Args:
        directory: the SavedModel.
        runs: list of `(signature_name, {input_name: array})`.
        repeats: extra timed calls per run (an int, or one per run).

    Returns:
        `(outputs, seconds, modules)`: one output dict per run, the median
        seconds per call of each run (NaN without repeats) and the top-level
        modules the process had imported.

    Example:
    >>> runs = [("serving_default", {"text": np.array(["A fine film."])})]
    >>> outputs, _, modules = run_saved_model(saved_model_dir, runs)
    >>> outputs[0]["probabilities"].shape, "kbert" in modules
    ((1, 2), False)
    """
    if isinstance(repeats, int):
        repeats = [repeats] * len(runs)
    with work_directory("serving") as tmp:
        job = {"directory": os.path.abspath(directory), "runs": []}
        for i, (signature, feeds) in enumerate(runs):
            inputs = os.path.join(tmp, f"in{i}.npz")
            np.savez(inputs, **{name: _encode(value) for name, value in feeds.items()})
            job["runs"].append(
                {
                    "signature": signature,
                    "inputs": inputs,
                    "outputs": os.path.join(tmp, f"out{i}.npz"),
                    "repeats": repeats[i],
                }
            )
        job_path = os.path.join(tmp, "job.json")
        with open(job_path, "w", encoding="utf-8") as file:
            json.dump(job, file)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        env.pop("KERAS_BACKEND", None)
        result = run_child(
            [SERVING_SCRIPT, job_path],
            env=env,
            capture_output=True,
            text=True,
        )
        if result.returncode:
            raise RuntimeError(
                f"Loading {directory} in a TensorFlow-only process failed:\n"
                f"{result.stderr[-3000:]}"
            )
        outputs, seconds, modules = [], [], []
        for run in job["runs"]:
            with np.load(run["outputs"]) as data:
                outputs.append({k: data[k] for k in data.files if not k.startswith("__")})
                seconds.append(float(data["__seconds__"]))
                modules = [m.decode() for m in data["__modules__"]]
        return outputs, seconds, modules


def run_saved_model_here(directory, runs):
    """`run_saved_model` in this process (`tf.saved_model.load`), no timing.

    Example:
    >>> runs = [("serve_token_ids", token_inputs)]
    >>> run_saved_model_here(saved_model_dir, runs)[0]["logits"].shape
    (3, 2)
    """
    # lazy: a runtime loads only when an artifact is run
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tf-text ops

    loaded = tf.saved_model.load(os.fspath(directory))
    outputs = []
    for signature, feeds in runs:
        tensors = {name: tf.constant(_encode(value)) for name, value in feeds.items()}
        result = loaded.signatures[signature](**tensors)
        outputs.append({name: value.numpy() for name, value in result.items()})
    return outputs


def tflite_custom_ops(model_bytes):
    """Names of the custom (non-builtin) operators in a TFLite flatbuffer.

    Example:
    >>> with open(tflite_file, "rb") as file:  # token ids in: builtin ops only
    ...     tflite_custom_ops(file.read())
    []
    """
    # lazy: a runtime loads only when an artifact is run
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAsModel(model_bytes, 0)
    names = set()
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            names.add(code.CustomCode().decode("utf-8"))
    return sorted(names)


class TFLiteRunner:
    """An `ai_edge_litert` interpreter for one TFLite file (its first signature).

    The tensorflow-text TFLite kernels are registered only when the model
    holds custom ops, so a builtin-only model proves it runs on a plain
    interpreter.

    Example:
    >>> runner = TFLiteRunner(tflite_file)  # a static batch of 1
    >>> row = {name: value[:1] for name, value in token_inputs.items()}
    >>> {name: value.shape for name, value in runner(row).items()}
    {'logits': (1, 2), 'probabilities': (1, 2)}
    """

    def __init__(self, path, num_threads=None):
        # lazy: a runtime loads only when an artifact is run
        from ai_edge_litert import interpreter as litert

        with open(path, "rb") as file:
            model_bytes = file.read()
        self.custom_ops = tflite_custom_ops(model_bytes)
        if self.custom_ops:
            import tensorflow_text  # lazy: a runtime loads only when an artifact is run

            self.interpreter = litert.InterpreterWithCustomOps(
                custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                model_content=model_bytes,
                num_threads=num_threads,
            )
        else:
            self.interpreter = litert.Interpreter(
                model_content=model_bytes, num_threads=num_threads
            )
        signatures = self.interpreter.get_signature_list()
        self.signature = next(iter(signatures))
        self.runner = self.interpreter.get_signature_runner(self.signature)
        self.input_details = self.runner.get_input_details()

    def input_shape(self, name):
        """The static shape of an input, -1 for dynamic dimensions."""
        return tuple(int(d) for d in self.input_details[name]["shape_signature"])

    def __call__(self, feeds):
        converted = {}
        for name, value in feeds.items():
            value = np.asarray(value)
            if value.dtype.kind in "UO":
                value = _encode(value)
            else:
                value = value.astype(self.input_details[name]["dtype"])
            converted[name] = value
        outputs = self.runner(**converted)
        return {name: np.asarray(value) for name, value in outputs.items()}


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


class MediaPipeClassifierRunner:
    """MediaPipe Tasks' `TextClassifier` on a TFLite file with BERT metadata.

    Returns probabilities `(batch, num_classes)` in label-index order and the
    label names MediaPipe read from the metadata.
    """

    def __init__(self, path):
        # lazy: a runtime loads only when an artifact is run
        from mediapipe.tasks.python.core.base_options import BaseOptions
        from mediapipe.tasks.python.text import text_classifier

        options = text_classifier.TextClassifierOptions(
            base_options=BaseOptions(model_asset_path=os.fspath(path))
        )
        self.classifier = text_classifier.TextClassifier.create_from_options(options)

    def __call__(self, texts):
        probabilities, names = [], {}
        for text in texts:
            result = self.classifier.classify(text)
            categories = result.classifications[0].categories
            row = np.zeros(len(categories), "float32")
            for category in categories:
                row[category.index] = category.score
                names[category.index] = category.category_name
            probabilities.append(row)
        labels = [names[i] for i in sorted(names)]
        return {"probabilities": np.stack(probabilities)}, labels

    def close(self):
        self.classifier.close()


def median_seconds(function, repeats=5, warmup=1):
    """Median wall-clock seconds of `function()` over `repeats` calls.

    Example:
    >>> runner = OnnxRunner(onnx_file)
    >>> median_seconds(lambda: runner(token_inputs), repeats=3) > 0
    True
    """
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
