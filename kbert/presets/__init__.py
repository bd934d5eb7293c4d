"""Checkpoints in and out: kbert presets, Hugging Face and Google BERT directories.

`kbert.presets.formats.FORMATS` is the table of formats; the BERT weight
layout they all fill is `kbert.presets.bert_layout`. Importing
`kbert.presets.formats` connects the model classes' `from_preset` /
`save_to_preset` to it (see `kbert.models.preset_io`).

This package's own module imports nothing, so `kbert convert --help` stays
light.
"""

# What `kbert convert --to` writes: a kbert preset or a Hugging Face directory.
OUTPUT_FORMATS = ("kbert", "hf")
