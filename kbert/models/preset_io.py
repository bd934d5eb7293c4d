"""What every kbert model class declares about itself, and its preset I/O.

Checkpoint converters (`kbert.presets`), exporters (`kbert.export`) and the
command line read a model class's facts from the class attributes below;
every class states its own in its file, and no table elsewhere repeats them.

`from_preset` / `save_to_preset` run the checkpoint formats of
`kbert.presets`, which sits above the models: it builds models and reads
these declarations, so the models cannot import it statically. Importing
`kbert.presets.formats` hands its loader and saver to `use_preset_formats`;
the first `from_preset` / `save_to_preset` imports it by name when nothing
has yet (`import kbert` loads no model, to keep `kbert --help` light).
"""

import importlib

from kbert.utils.artifact_kinds import check_target

# The module that registers the checkpoint formats on import.
_FORMATS_MODULE = "kbert.presets.formats"

_preset_formats = {}


def use_preset_formats(load, save):
    """Connects `from_preset` / `save_to_preset` to the checkpoint formats.

    `load(cls, source, **overrides)` builds a model; `save(model, directory)`
    writes a kbert preset. `kbert.presets.formats` calls this once, on import.
    """
    _preset_formats.update(load=load, save=save)


def _preset_format(action):
    if action not in _preset_formats:
        importlib.import_module(_FORMATS_MODULE)
    if action not in _preset_formats:  # only while it is half-imported
        raise RuntimeError(f"{_FORMATS_MODULE} is half-imported: import kbert first.")
    return _preset_formats[action]


class PresetMixin:
    """The declarations of a kbert model class, and `from_preset` / `save_to_preset`.

    Subclasses override the attributes that differ from these defaults (a
    backbone-only model: `BertModel`, no heads, no pooler use).
    """

    # === Declarations: what converters, exporters and the CLI read ===
    # Its name on the command line (`kbert convert --task`), in export records
    # and in checkpoint detection; None for a class they do not offer.
    task_name = None
    # The transformers class it is saved as and detected from, the heads of
    # the BERT weight layout that class holds (`kbert.presets.bert_layout`)
    # and whether it holds `bert.pooler`.
    hf_architecture = "BertModel"
    hf_heads = ()
    hf_pooler = True
    # The layout heads an original Google BERT (TF1) checkpoint stores for it.
    google_heads = ()
    # Whether its outputs depend on `pooled_output`: loading a checkpoint
    # without pooler weights warns.
    uses_pooler = False
    # String inputs of its exported text signatures; `pair_text_inputs` for
    # an export with `text_pairs=True` (None: it takes no pairs).
    text_inputs = ("text",)
    pair_text_inputs = None
    # Its exported outputs (`export_outputs` names) that index word pieces:
    # one value per token (`sequence_outputs`, sequence axis right after the
    # batch) or one per [MASK] (`position_outputs`). Exported string
    # signatures of such a model also return the `token_ids` they ran on;
    # ONNX names those axes; raw-text `predict` pads and joins windows on them.
    sequence_outputs = ()
    position_outputs = ()
    # How an artifact's predictions are compared with this model's
    # (`kbert.export.agreement`): "argmax" (the class), "argmax_per_token"
    # (the label of every real token), "span" (start and end token), "cosine"
    # (of its one output without a sequence axis), None (nothing to compare).
    agreement = None
    # The MediaPipe task that runs its `flavour="mediapipe"` TFLite file, and
    # what that task calls the outputs it reads (None: no MediaPipe task).
    mediapipe_task = None
    mediapipe_outputs = None

    @property
    def per_token_outputs(self):
        return bool(self.sequence_outputs or self.position_outputs)

    def export_outputs(self, outputs):
        """Named outputs of an exported artifact, from this model's raw outputs.

        Runs on backend tensors; `kbert.export` gives every runtime these names.

        Example:
        >>> sorted(backbone.export_outputs(backbone(token_inputs)))
        ['pooled_output', 'sequence_output']
        """
        raise ValueError(
            f"Cannot export a {type(self).__name__}: export a task model "
            "(classifier, token classifier, question answerer, multiple choice, "
            "masked LM, text embedder) or a backbone."
        )

    # === Presets ===

    @classmethod
    def from_preset(cls, source, **overrides):
        """Builds this class from a kbert preset, an HF or a Google BERT
        directory, or a registered name (`kbert.list_presets()`).

        `overrides` replace config values (backbone ones such as `dropout` or
        `dtype` too) or give task arguments such as `num_classes`.

        Example:
        >>> classifier = kbert.BertClassifier.from_preset(classifier_preset)
        >>> classifier.num_classes, classifier.backbone.num_layers
        (2, 2)
        >>> # kbert.BertMaskedLM.from_preset("splade_tiny_mlm"): a registered name
        """
        return _preset_format("load")(cls, source, **overrides)

    def save_to_preset(self, directory, overwrite=False):
        """Writes a kbert preset directory (atomically) that `from_preset` reads.

        A directory holding files kbert did not write is refused
        (`kbert.utils.artifact_kinds`) unless `overwrite=True`.

        Example:
        >>> backbone.save_to_preset("out/backbone")
        >>> kbert.BertBackbone.from_preset("out/backbone").num_layers
        2
        """
        check_target(directory, "kbert_preset", overwrite)
        _preset_format("save")(self, directory)
