"""from_preset / save_to_preset with Hugging Face tokenizer files."""

import json
import os
import shutil

import pytest

from kbert.preprocessing import BertPreprocessor, BertTokenizer, read_tokenizer_files
from kbert.sources import resolve_preset
from tests.test_case import ragged_lists

MODEL_DIR = resolve_preset("all_minilm_l6_v2")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "café", "cafe", "##s"]


def vocab_lines():
    with open(os.path.join(MODEL_DIR, "vocab.txt"), encoding="utf-8") as file:
        return file.read().splitlines()


def test_tokenizer_json_alone(tmp_path):
    shutil.copy(os.path.join(MODEL_DIR, "tokenizer.json"), tmp_path)
    files = read_tokenizer_files(tmp_path)
    assert files["vocabulary"] == vocab_lines()
    assert files["lowercase"] is True and files["strip_accents"] is None
    preprocessor = BertPreprocessor.from_preset(tmp_path)
    assert preprocessor.sequence_length == 128  # tokenizer.json truncation
    assert preprocessor.tokenizer.lowercase


def test_vocab_and_tokenizer_config(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB), encoding="utf-8")
    assert read_tokenizer_files(tmp_path)["lowercase"] is True  # HF's default
    config = {"do_lower_case": False, "strip_accents": True}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    tokenizer = BertTokenizer.from_preset(tmp_path)
    assert (tokenizer.lowercase, tokenizer.strip_accents) == (False, True)
    ids = tokenizer(["cafés"])
    assert ragged_lists(ids) == [[6, 7]]
    override = BertTokenizer.from_preset(tmp_path, strip_accents=False)
    ids = override(["cafés"])
    assert ragged_lists(ids) == [[5, 7]]


def test_save_to_preset_round_trip(tmp_path):
    tokenizer = BertTokenizer(VOCAB, lowercase=False, normalization="tflite")
    preprocessor = BertPreprocessor(tokenizer, sequence_length=9, truncation="only_first")
    preprocessor.save_to_preset(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [
        "preprocessor_config.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["do_lower_case"] is False and config["strip_accents"] is None
    loaded = BertPreprocessor.from_preset(tmp_path, normalization="tflite")
    assert (loaded.sequence_length, loaded.truncation) == (9, "only_first")
    assert loaded.tokenizer.get_vocabulary() == VOCAB
    assert loaded.tokenizer.normalization == "tflite"
    assert BertPreprocessor.from_preset(tmp_path, sequence_length=5).sequence_length == 5


@pytest.mark.backend_independent
def test_transformers_loads_what_we_save(tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizer = BertTokenizer.from_preset(MODEL_DIR)
    tokenizer.save_to_preset(tmp_path)
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    text = "Héllo [MASK] wörld, ﬁne 日本!"
    assert (
        hf(text, add_special_tokens=False)["input_ids"]
        == ragged_lists(tokenizer([text]))[0]
    )


def test_bad_directories(tmp_path):
    with pytest.raises(ValueError, match="holds neither vocab.txt nor tokenizer.json"):
        read_tokenizer_files(tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}}))
    with pytest.raises(ValueError, match="not a WordPiece"):
        read_tokenizer_files(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_tokenizer_files(tmp_path)
