"""What a kbert model exports: its inputs, its named outputs and its text side.

Every exporter (SavedModel, TFLite, ONNX) reads the same `ExportSpec`, so a
classifier answers `logits` and `probabilities` on every runtime, and a
question answerer `start_logits` and `end_logits`.
"""

import dataclasses

import keras
import numpy as np

TOKEN_INPUTS = ("token_ids", "segment_ids", "padding_mask")

# Text inputs of the string signatures, per task (pairs: two segments).
SINGLE_TEXT = ("text",)
PAIR_TEXT = ("text", "text_pair")
QUESTION_CONTEXT = ("question", "context")
PROMPT_CHOICES = ("prompt", "choices")


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """The exported interface of one model.

    Attributes:
        task: the task name of `kbert.presets.tasks.TASK_CLASSES`.
        token_inputs: names of the token-id inputs, in order.
        extra_dims: dimensions between batch and sequence (`(num_choices,)`
            for multiple choice).
        text_inputs: names of the string inputs of the text signatures.
        output_names: names of the outputs, in order.
        labels: class names of a classifier (`id2label`, else `label_{i}`).
    """

    task: str
    token_inputs: tuple
    extra_dims: tuple
    text_inputs: tuple
    output_names: tuple
    labels: tuple = ()

    @property
    def is_pair(self):
        return len(self.text_inputs) == 2


def task_of(model):
    """The task name of a kbert model ("classifier", "question_answerer"...).

    Example:
    >>> task_of(kbert.BertQuestionAnswerer(backbone))
    'question_answerer'
    """
    from kbert.presets.tasks import task_name

    return task_name(type(model))


def export_spec(model, text_pairs=None):
    """The `ExportSpec` of a kbert model.

    `text_pairs=True` makes the string signature of a classifier take
    `(text, text_pair)`; question answerers always take
    `(question, context)`.

    Example:
    >>> export_spec(kbert.BertClassifier(backbone, num_classes=2)).output_names
    ('logits', 'probabilities')
    """
    task = task_of(model)
    extra_dims = ()
    token_inputs = TOKEN_INPUTS
    labels = ()
    text_inputs = PAIR_TEXT if text_pairs else SINGLE_TEXT
    if task == "classifier":
        outputs = ("logits",)
        if model.problem_type != "regression":
            outputs += ("probabilities",)
        id2label = model.id2label or {}
        labels = tuple(str(id2label.get(i, f"label_{i}")) for i in range(model.num_classes))
    elif task == "token_classifier":
        outputs = ("logits", "probabilities")
        id2label = model.id2label or {}
        labels = tuple(str(id2label.get(i, f"label_{i}")) for i in range(model.num_classes))
    elif task == "question_answerer":
        outputs = ("start_logits", "end_logits")
        text_inputs = QUESTION_CONTEXT
    elif task == "multiple_choice":
        outputs = ("logits", "probabilities")
        extra_dims = (model.num_choices,)
        text_inputs = PROMPT_CHOICES
    elif task == "masked_lm":
        outputs = ("logits",)
        token_inputs = TOKEN_INPUTS + ("mask_positions",)
    elif task == "text_embedder":
        outputs = ("embeddings",)
    elif task == "backbone":
        outputs = ("sequence_output", "pooled_output")
    else:
        raise ValueError(
            f"Cannot export a {type(model).__name__}: export a task model "
            "(classifier, token classifier, question answerer, multiple choice, "
            "masked LM, text embedder) or a backbone."
        )
    if text_pairs and task != "classifier":
        raise ValueError(f"text_pairs=True is for classifiers, not a {task}.")
    return ExportSpec(task, token_inputs, extra_dims, text_inputs, outputs, labels)


def named_outputs(model, spec, raw):
    """The model's raw outputs as a dict named by `spec` (Keras ops).

    Example:
    >>> named_outputs(classifier, spec, logits)
    {'logits': ..., 'probabilities': ...}
    """
    from keras import ops

    if spec.task == "question_answerer":
        return {"start_logits": raw["start_logits"], "end_logits": raw["end_logits"]}
    if spec.task == "backbone":
        return {
            "sequence_output": raw["sequence_output"],
            "pooled_output": raw["pooled_output"],
        }
    if spec.task == "text_embedder":
        return {"embeddings": raw}
    outputs = {"logits": raw}
    if "probabilities" in spec.output_names:
        multi_label = getattr(model, "problem_type", None) == "multi_label"
        outputs["probabilities"] = (
            ops.sigmoid(raw) if multi_label else ops.softmax(raw, axis=-1)
        )
    return outputs


def forward(model, spec, inputs):
    """Named outputs of `model` for a dict of token inputs, in inference mode.

    Example:
    >>> forward(classifier, spec, {"token_ids": ids, "segment_ids": s, "padding_mask": m})
    """
    return named_outputs(model, spec, model(dict(inputs), training=False))


def keras_outputs(model, spec, inputs):
    """`forward` on NumPy inputs, as NumPy float32 arrays.

    Example:
    >>> keras_outputs(classifier, spec, features)["probabilities"].shape
    (16, 2)
    """
    outputs = forward(model, spec, {k: np.asarray(v) for k, v in inputs.items()})
    return {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in outputs.items()}


def token_input_shape(spec, batch_size=None, sequence_length=None, name="token_ids"):
    """Shape of one token input: (batch, *extra_dims, seq), or (batch, P) masks.

    Example:
    >>> token_input_shape(spec, sequence_length=128)
    (None, 128)
    """
    if name == "mask_positions":
        return (batch_size, None)
    return (batch_size,) + tuple(spec.extra_dims) + (sequence_length,)
