"""Preset writers refuse a directory with the user's files, replace their own."""

import os

import pytest

import kbert
from kbert.cli import main
from kbert.presets.convert import convert
from kbert.utils.artifact_kinds import ForeignFilesError
from kbert.utils.owned_temps import OWNED
from tests.export.export_helpers import preprocessor, tiny_model

pytestmark = (
    pytest.mark.backend_independent
)  # files, not weights: writers per backend are tested in tests/presets


def notes_in(directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "notes.txt")
    with open(path, "w") as file:
        file.write("mine")
    return path


def no_temporaries_beside(directory):
    return not [n for n in os.listdir(os.path.dirname(directory)) if OWNED.match(n)]


@pytest.fixture(scope="module")
def classifier():
    return tiny_model(num_classes=2)


WRITERS = {
    "save_to_preset": lambda model, path, **kw: model.save_to_preset(path, **kw),
    "save_hf": lambda model, path, **kw: kbert.save_hf(model, path, **kw),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_model_writers(writer, classifier, tmp_path, capsys):
    write = WRITERS[writer]
    target = str(tmp_path / "out")
    notes = notes_in(target)
    with pytest.raises(ForeignFilesError, match="notes.txt"):
        write(classifier, target)
    assert os.listdir(target) == ["notes.txt"]

    write(classifier, target, overwrite=True)
    assert not os.path.exists(notes)
    assert "overwrite=True: replacing" in capsys.readouterr().err

    # kbert's own earlier artifact of the same kind: replaced whole, no flag.
    assert os.path.exists(os.path.join(target, "vocab.txt"))
    write(classifier.backbone, target)  # no preprocessor: its files go too
    assert not os.path.exists(os.path.join(target, "vocab.txt"))
    assert no_temporaries_beside(target)


def test_tokenizer_and_preprocessor_write_into_kbert_directories(
    classifier, tmp_path, capsys
):
    target = str(tmp_path / "preset")
    classifier.backbone.save_to_preset(target)
    tokenizer_only = preprocessor()
    tokenizer_only.tokenizer.save_to_preset(target)  # beside the backbone: fine
    tokenizer_only.save_to_preset(target)
    assert kbert.BertClassifier.from_preset(target, num_classes=2).preprocessor
    notes = notes_in(target)
    capsys.readouterr()
    for save in (tokenizer_only.save_to_preset, tokenizer_only.tokenizer.save_to_preset):
        with pytest.raises(ForeignFilesError, match="Refusing to write tokenizer files"):
            save(target)
        save(target, overwrite=True)
        assert os.path.exists(notes)  # it writes its files; it removes nothing
    # It says so, once per target in a process.
    assert capsys.readouterr().err.count("overwrite=True: replacing") == 1


@pytest.mark.parametrize("to", ["kbert", "hf"])
def test_convert(to, classifier, tmp_path, capsys):
    source = str(tmp_path / "source")
    classifier.save_to_preset(source)
    target = str(tmp_path / "out")
    notes_in(target)
    with pytest.raises(ForeignFilesError, match="notes.txt"):
        convert(str(tmp_path / "missing"), target, to=to)  # refused before loading
    assert main(["convert", source, target, "--to", to]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert main(["convert", source, target, "--to", to, "--overwrite"]) == 0
    assert "notes.txt" not in os.listdir(target)
    first = os.stat(os.path.join(target, "vocab.txt")).st_ino
    assert main(["convert", source, target, "--to", to]) == 0  # its own: replaced
    assert os.stat(os.path.join(target, "vocab.txt")).st_ino != first
    assert no_temporaries_beside(target)
