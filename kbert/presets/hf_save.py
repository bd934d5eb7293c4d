"""`save_hf`: write a kbert model as a Hugging Face transformers directory."""

import json
import os

from kbert.models.text_embedder import BertTextEmbedder
from kbert.presets.hf_config import hf_config
from kbert.presets.hf_weight_map import HF_TASKS, stored_name
from kbert.presets.huggingface import bind_hf_weights
from kbert.presets.sentence_transformers_files import write_sentence_transformers_files
from kbert.presets.tasks import base_class
from kbert.presets.weight_map import export_weights
from kbert.utils.atomic import atomic_directory


def save_hf(model, directory):
    """Writes `model` as an HF directory that `transformers` loads unchanged.

    Writes `config.json` (architecture per task: `BertModel`,
    `BertForMaskedLM`, `BertForPreTraining`, `BertForSequenceClassification`,
    `BertForTokenClassification`, `BertForQuestionAnswering`,
    `BertForMultipleChoice`), `model.safetensors`, the tokenizer files when the
    model has a preprocessor, and for a `BertTextEmbedder` the
    sentence-transformers module files. The directory appears whole or not
    at all.

    Example:
    >>> kbert.save_hf(classifier, "out/hf")
    >>> transformers.BertForSequenceClassification.from_pretrained("out/hf")
    """
    from safetensors.numpy import save_file

    klass = base_class(type(model))
    hf_task = HF_TASKS[klass]
    tensors = export_weights(bind_hf_weights(model, hf_task.heads, hf_task.has_pooler))
    prefixed = hf_task.architecture != "BertModel"
    tensors = {stored_name(name, prefixed): value for name, value in tensors.items()}
    dtype = str(next(iter(tensors.values())).dtype)
    config = hf_config(model, hf_task.architecture, dtype)
    preprocessor = getattr(model, "preprocessor", None)
    with atomic_directory(directory) as tmp:
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as file:
            json.dump(config, file, indent=2, sort_keys=True)
        save_file(
            tensors, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"}
        )
        if preprocessor is not None and hasattr(preprocessor, "save_to_preset"):
            preprocessor.save_to_preset(tmp)
        if klass is BertTextEmbedder:
            backbone = model.backbone
            length = getattr(preprocessor, "sequence_length", None)
            write_sentence_transformers_files(
                model, tmp, max_seq_length=length or backbone.max_sequence_length
            )
