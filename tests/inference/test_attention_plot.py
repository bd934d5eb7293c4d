"""`kbert attention`: the heat map PNG of a tiny model, and its numbers."""

import argparse

import keras
import numpy as np
import pytest

import kbert
from kbert.inference.attention_command import add_attention_command
from kbert.inference.attention_plot import DPI, attention_maps, figure_inches
from tests.test_case import tiny_backbone

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *"a fine film was not dull .".split()]


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory):
    from kbert.preprocessing import BertPreprocessor, BertTokenizer

    directory = tmp_path_factory.mktemp("attention") / "preset"
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=16)
    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    kbert.BertClassifier(backbone, num_classes=2, preprocessor=preprocessor).save_to_preset(
        directory
    )
    return str(directory)


def run(argv):
    parser = argparse.ArgumentParser()
    add_attention_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_attention_command_writes_a_labelled_heat_map(tmp_path, tiny_preset, capsys):
    from matplotlib.image import imread

    text = "A fine film, not dull."
    path = tmp_path / "map.png"
    assert run(["attention", tiny_preset, text, "-o", str(path), "--layer", "0"]) == 0
    assert (
        f"Wrote {path}: layer 1 of 2, mean of 2 heads, 9 tokens" in capsys.readouterr().out
    )

    tokens, attentions = attention_maps(tiny_preset, text)
    # The word pieces the preprocessor makes, padding left out.
    preprocessor = kbert.BertPreprocessor.from_preset(tiny_preset)
    ids = np.asarray(preprocessor.preprocess([text])["token_ids"])[0]
    assert tokens == [VOCABULARY[i] for i in ids if i != 0]
    # The backbone's own attention probabilities (parity with transformers:
    # tests/models/test_backbone.py), each row a distribution.
    backbone = kbert.BertBackbone.from_preset(tiny_preset, output_attentions=True)
    n = len(tokens)
    features = {
        "token_ids": ids[None, :n],
        "segment_ids": np.zeros((1, n), "int32"),
        "padding_mask": np.ones((1, n), "int32"),
    }
    expected = [keras.ops.convert_to_numpy(a)[0] for a in backbone(features)["attentions"]]
    np.testing.assert_allclose(attentions, np.stack(expected), atol=1e-6)
    np.testing.assert_allclose(attentions.sum(-1), 1.0, atol=1e-5)

    image = imread(path)  # a PNG of the documented size
    width, height = figure_inches(n)
    assert image.shape[:2] == (round(height * DPI), round(width * DPI))
    assert image[..., :3].std() > 0.05  # not blank


def test_out_of_range_layer_and_head_are_named(tmp_path, tiny_preset):
    path = tmp_path / "map.png"
    with pytest.raises(ValueError, match="layer 5 is out of range: the model has 2 layers"):
        run(["attention", tiny_preset, "a film", "-o", str(path), "--layer", "5"])
    with pytest.raises(ValueError, match="head 2 is out of range: each layer has 2 heads"):
        run(["attention", tiny_preset, "a film", "-o", str(path), "--head", "2"])
    assert not path.exists()


def test_attention_command_keeps_the_users_png(tmp_path, tiny_preset, capsys):
    path = tmp_path / "photo.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n the user's photo")
    argv = ["attention", tiny_preset, "A fine film.", "-o", str(path)]
    with pytest.raises(ValueError, match="photo.png"):
        run(argv)
    assert path.read_bytes().endswith(b"the user's photo")
    assert run([*argv, "--overwrite"]) == 0
    assert "overwrite=True: replacing" in capsys.readouterr().err
    first = path.stat().st_mtime_ns
    assert run(argv) == 0  # the map it drew: drawn again, no flag needed
    assert path.stat().st_mtime_ns >= first and path.stat().st_size > 1000
