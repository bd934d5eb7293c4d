"""Every Python block of the READMEs runs verbatim, so none of them rots.

The blocks of one file run in order in one namespace (a block may use what
an earlier one defined), in a fresh working directory, once per suite, in
the PyTorch run (`backend_independent`: 71 s there against 100 s in the
TensorFlow run, measured here): the blocks take real MiniLM weights, and
what they show per backend (embeddings, fine-tuning, int8, LoRA, exports)
the tests of each module check on all three backends.
Files a README takes as the user's own (a corpus, a vocabulary, an exported
model) are made first, small (`USER_FILES`). Code that needs what a test
machine lacks (several devices, a cluster) is fenced as ```text instead.
A new section with a ```python block is picked up without a change here.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
READMES = (
    "README.md",
    "export/README.md",
    "kbert/pretraining/README.md",
    "export/android/README.md",
)
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text):
    """`(line, code)` of each ```python block of a Markdown text."""
    return [
        (text.count("\n", 0, match.start(1)) + 1, match.group(1))
        for match in BLOCK.finditer(text)
    ]


def pretraining_files():
    """`corpus.txt` and `vocab.txt`: 40 synthetic documents, their words."""
    from tests.pretraining.pretraining_helpers import synthetic_documents, toy_vocabulary

    with open("corpus.txt", "w") as file:
        for document in synthetic_documents(40, seed=0):
            file.writelines(sentence + "\n" for sentence in document)
            file.write("\n")
    pathlib.Path("vocab.txt").write_text("\n".join(toy_vocabulary()) + "\n")


def android_files():
    """`out/classifier` (a tiny classifier's preset) and its string-flavour
    `classifier_text.tflite`, as the README's `kbert export` writes it."""
    import kbert.export
    from tests.export.export_helpers import tiny_model

    model = tiny_model(num_classes=2)
    model.save_to_preset("out/classifier")
    kbert.export.tflite(model, "classifier_text.tflite", flavour="string")


USER_FILES = {
    "kbert/pretraining/README.md": pretraining_files,
    "export/android/README.md": android_files,
}


def test_python_blocks_are_found():
    assert python_blocks("```bash\nls\n```\n```python\na = 1\n```\n") == [(5, "a = 1\n")]
    for readme in READMES:
        assert python_blocks((ROOT / readme).read_text(encoding="utf-8")), readme


@pytest.mark.backend_independent
@pytest.mark.parametrize("readme", READMES)
def test_readme_python_blocks_run(readme, tmp_path, monkeypatch):
    from kbert.export import agreement

    # Quantized exports check agreement on 500 reviews; 64 keep the run short
    # (tests/export measures the full check).
    monkeypatch.setattr(agreement, "AGREEMENT_TEXTS", 64)
    monkeypatch.chdir(tmp_path)
    USER_FILES.get(readme, lambda: None)()
    namespace = {"__name__": "__readme__"}
    for line, code in python_blocks((ROOT / readme).read_text(encoding="utf-8")):
        # The file and line in tracebacks point into the README.
        exec(compile("\n" * (line - 1) + code, str(ROOT / readme), "exec"), namespace)
