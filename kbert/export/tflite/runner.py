"""Runs a TFLite file: `ai_edge_litert`'s interpreter, with tensorflow-text's
TFLite registrar only when the model holds custom ops; and MediaPipe Tasks'
`TextClassifier` on a file with BERT metadata.

Takes and returns dicts of NumPy arrays keyed by input and output name.
"""

import os

import numpy as np

from kbert.utils.strings import utf8_bytes


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
                value = utf8_bytes(value)
            else:
                value = value.astype(self.input_details[name]["dtype"])
            converted[name] = value
        outputs = self.runner(**converted)
        return {name: np.asarray(value) for name, value in outputs.items()}


class MediaPipeClassifierRunner:
    """MediaPipe Tasks' `TextClassifier` on a TFLite file with BERT metadata.

    Returns probabilities `(batch, num_classes)` in label-index order and the
    label names MediaPipe read from the metadata.
    """

    RUNTIME = "mediapipe.tasks.python.text.TextClassifier"

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


# MediaPipe task -> the runner of MediaPipe's Python Tasks API kbert checks a
# `"mediapipe"` file with. The other tasks' files (BertQuestionAnswerer: no
# Python API; TextEmbedder) are checked on the LiteRT interpreter only.
MEDIAPIPE_RUNNERS = {"TextClassifier": MediaPipeClassifierRunner}


def mediapipe_runner(spec, flavour):
    """The MediaPipe Tasks runner class for a `flavour` file of `spec`, or None.

    Example:
    >>> from types import SimpleNamespace
    >>> mediapipe_runner(SimpleNamespace(mediapipe_task="TextClassifier"), "mediapipe")
    <class 'kbert.export.tflite.runner.MediaPipeClassifierRunner'>
    >>> mediapipe_runner(SimpleNamespace(mediapipe_task="TextClassifier"), "string") is None
    True
    """
    return MEDIAPIPE_RUNNERS.get(spec.mediapipe_task) if flavour == "mediapipe" else None
