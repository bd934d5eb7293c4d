"""`save_hf`: write a kbert model as a Hugging Face transformers directory."""

import json
import os

from safetensors.numpy import save_file

from kbert.models.text_embedder import BertTextEmbedder
from kbert.preprocessing.hf_tokenizer_files import set_model_max_length
from kbert.presets.hf_config import hf_config
from kbert.presets.hf_weight_map import stored_name
from kbert.presets.huggingface import bind_hf_weights
from kbert.presets.sentence_transformers_files import write_sentence_transformers_files
from kbert.presets.weight_map import export_weights
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory


def save_hf(model, directory, overwrite=False):
    """Writes `model` as an HF directory that `transformers` loads unchanged.

    Writes `config.json` (architecture per task: `BertModel`,
    `BertForMaskedLM`, `BertForPreTraining`, `BertForSequenceClassification`,
    `BertForTokenClassification`, `BertForQuestionAnswering`,
    `BertForMultipleChoice`), `model.safetensors`, the tokenizer files when the
    model has a preprocessor, and for a `BertTextEmbedder` the
    sentence-transformers module files. The directory appears whole or not
    at all. A directory holding files kbert did not write is refused
    (`kbert.utils.artifact_kinds`) unless `overwrite=True`.

    Example:
    >>> kbert.save_hf(classifier, "out/hf")
    >>> import transformers
    >>> transformers.BertForSequenceClassification.from_pretrained("out/hf").num_labels
    2
    """
    check_target(directory, "hf", overwrite)
    tensors = export_weights(bind_hf_weights(model, model.hf_heads, model.hf_pooler))
    prefixed = model.hf_architecture != "BertModel"
    tensors = {stored_name(name, prefixed): value for name, value in tensors.items()}
    dtype = str(next(iter(tensors.values())).dtype)
    config = hf_config(model, model.hf_architecture, dtype)
    preprocessor = getattr(model, "preprocessor", None)
    with atomic_directory(directory) as tmp:
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as file:
            json.dump(config, file, indent=2, sort_keys=True)
        save_file(
            tensors, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"}
        )
        backbone = getattr(model, "backbone", model)
        if preprocessor is not None and hasattr(preprocessor, "save_to_preset"):
            preprocessor.save_to_preset(tmp)
            set_model_max_length(tmp, backbone.max_sequence_length)
        if isinstance(model, BertTextEmbedder):
            length = getattr(preprocessor, "sequence_length", None)
            write_sentence_transformers_files(
                model, tmp, max_seq_length=length or backbone.max_sequence_length
            )
