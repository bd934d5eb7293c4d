"""`from_preset` refuses arguments nobody takes, on every checkpoint format,
and a vocabulary that does not fit the embedding table."""

import json
import logging
import os

import numpy as np
import pytest

import kbert
from kbert.presets.formats import FORMATS
from tests.test_case import tiny_backbone

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(59)
]  # 64 lines: tiny_backbone's table


def _write(path, data):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file)


def marker_directory(root, description):
    """A directory holding only what makes `FORMATS` recognise it: the
    arguments are checked before any weight is read."""
    directory = os.path.join(root, description.replace(" ", "_"))
    os.makedirs(directory)
    if description == "a kbert preset":
        _write(os.path.join(directory, "backbone.json"), {})
    elif description == "a keras-hub preset":
        _write(
            os.path.join(directory, "config.json"),
            {"registered_name": "keras_hub>BertBackbone", "class_name": "BertBackbone"},
        )
    elif description == "a sentence-transformers directory":
        _write(os.path.join(directory, "config.json"), {})
        _write(os.path.join(directory, "modules.json"), [])
    elif description == "a Hugging Face model directory":
        _write(os.path.join(directory, "config.json"), {})
    else:
        _write(os.path.join(directory, "bert_config.json"), {})
    return directory


@pytest.mark.backend_independent
@pytest.mark.parametrize("description", [f.description for f in FORMATS])
def test_every_format_refuses_a_misspelt_argument(tmp_path, description):
    directory = marker_directory(tmp_path, description)
    with pytest.raises(
        ValueError,
        match=r"num_clases is not an argument of BertClassifier\.from_preset; "
        r"did you mean num_classes\?",
    ):
        kbert.BertClassifier.from_preset(directory, num_clases=5)
    with pytest.raises(ValueError, match=r"dropuot .*did you mean dropout\?"):
        kbert.BertClassifier.from_preset(directory, num_classes=2, dropuot=0.5)
    with pytest.raises(ValueError, match=r"num_classes is not an argument of BertBackbone"):
        kbert.BertBackbone.from_preset(directory, num_classes=2)


@pytest.mark.backend_independent
def test_a_registered_name_refuses_a_misspelt_argument():
    with pytest.raises(ValueError, match=r"did you mean dropout\?"):
        kbert.BertMaskedLM.from_preset("splade_tiny_mlm", dropuot=0.0)


@pytest.mark.backend_independent
def test_preprocessor_arguments_without_a_preprocessor_are_refused(tmp_path):
    directory = marker_directory(tmp_path, "a kbert preset")
    with pytest.raises(ValueError, match=r"sequence_length sets the preprocessor, but "):
        kbert.BertBackbone.from_preset(directory, sequence_length=8)
    with pytest.raises(ValueError, match=r"holds no vocab.txt or tokenizer.json"):
        kbert.BertClassifier.from_preset(directory, num_classes=2, sequence_length=8)


def test_kbert_preset_overrides(tmp_path, caplog):
    backbone = tiny_backbone()
    kbert.BertClassifier(backbone, num_classes=3).save_to_preset(tmp_path / "classifier")
    backbone.save_to_preset(tmp_path / "backbone")
    with pytest.raises(ValueError, match=r"does not say num_classes; pass it"):
        kbert.BertClassifier.from_preset(tmp_path / "backbone")
    loaded = kbert.BertClassifier.from_preset(tmp_path / "classifier", dropout=0.0)
    assert loaded.num_classes == 3 and loaded.backbone.dropout == 0.0
    with caplog.at_level(logging.WARNING, logger="kbert.presets"):
        fresh = kbert.BertClassifier.from_preset(tmp_path / "classifier", num_classes=5)
    assert fresh.num_classes == 5
    assert "freshly initialized" in caplog.text


def _preset_with_vocabulary(directory, lines, rows=64):
    backbone = tiny_backbone(vocabulary_size=rows)
    preprocessor = kbert.BertPreprocessor(
        kbert.BertTokenizer(vocabulary=VOCABULARY), sequence_length=8
    )
    kbert.BertClassifier(backbone, num_classes=2, preprocessor=preprocessor).save_to_preset(
        directory
    )
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    return directory


def test_a_vocabulary_shorter_than_the_table_is_refused(tmp_path):
    # A table padded past its vocabulary (to a multiple of 64 or 128) loads.
    padded = _preset_with_vocabulary(str(tmp_path / "padded"), VOCABULARY, rows=128)
    assert kbert.BertClassifier.from_preset(padded).backbone.vocabulary_size == 128
    directory = _preset_with_vocabulary(str(tmp_path / "short"), VOCABULARY, rows=1000)
    with pytest.raises(
        ValueError, match=r"vocab.txt holds 64 word pieces, but .* 1,000 rows"
    ):
        kbert.BertClassifier.from_preset(directory)


def test_a_vocabulary_longer_than_the_table_is_refused(tmp_path):
    longer = VOCABULARY + [f"x{i}" for i in range(10)]
    directory = _preset_with_vocabulary(str(tmp_path / "long"), longer)
    with pytest.raises(ValueError, match=r"vocab.txt holds 74 word pieces, but .* 64 rows"):
        kbert.BertClassifier.from_preset(directory)


def test_a_vocabulary_as_long_as_the_table_loads(tmp_path):
    directory = _preset_with_vocabulary(str(tmp_path / "exact"), VOCABULARY)
    classifier = kbert.BertClassifier.from_preset(directory)
    assert np.asarray(classifier.predict(["w1 w2"], verbose=0)).shape == (1, 2)


def test_a_preset_with_non_finite_weights_is_refused(tmp_path):
    from kbert.presets.hf_save import save_hf

    backbone = tiny_backbone()
    backbone.pooler.bias.assign(np.array([np.nan, np.inf] + [0.0] * 14, "float32"))
    backbone.save_to_preset(tmp_path / "kbert")
    with pytest.raises(ValueError, match=r"pooler/bias: 2 of 16 values NaN or infinite"):
        kbert.BertBackbone.from_preset(tmp_path / "kbert")
    save_hf(backbone, str(tmp_path / "hf"))
    with pytest.raises(ValueError, match=r"pooler.dense.bias: 2 of 16 values NaN"):
        kbert.BertBackbone.from_preset(tmp_path / "hf")
