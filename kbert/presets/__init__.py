"""Checkpoints in and out: kbert presets, Hugging Face and Google BERT directories.

`kbert.presets.formats.FORMATS` is the table of formats; the BERT weight
layout they all fill is `kbert.presets.bert_layout`. Importing this package
connects the model classes' `from_preset` / `save_to_preset` to it (see
`kbert.models.preset_io`).
"""

from kbert.models import preset_io
from kbert.presets.formats import load_preset
from kbert.presets.kbert_format import save_kbert_preset

preset_io.use_preset_formats(load_preset, save_kbert_preset)
