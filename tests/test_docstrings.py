"""Every docstring example in kbert runs (doctest), on the backend under test.

Examples run in a fresh working directory per module (so `out/...` paths
land there), with the module's globals and the fixtures of
`tests/docstring_fixtures.py` they name. Modules whose examples do not
depend on the Keras backend (strings through TensorFlow ops, files,
checkpoint formats, whose behaviour per backend tests/ checks) run once, in
the PyTorch run, the shortest; export examples write TensorFlow artifacts
whatever the backend, so they run in the TensorFlow run.
"""

import doctest
import importlib
import pkgutil

import keras
import pytest

import kbert
from tests import docstring_fixtures

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
ONCE_ON_TENSORFLOW = ("kbert.export",)
# Data and model parallelism are JAX's (the mirrored strategy's lines are skipped).
ONLY_ON_JAX = ("kbert.distributed.strategies",)
ONCE_ON_TORCH = (
    "kbert.cli",
    "kbert.data",
    "kbert.finetuning",
    "kbert.inference.wordpiece_text",
    "kbert.preprocessing",
    "kbert.presets",
    "kbert.sources",
    "kbert.utils",
    "kbert.distributed.cluster",
    "kbert.distributed.tf_multi_worker",
    "kbert.models.bio",
    "kbert.models.qa_",
    "kbert.models.windows",
    "kbert.models.token_alignment",
    "kbert.pretraining.checkpointing",
    "kbert.pretraining.commands",
    "kbert.pretraining.data_creation",
    "kbert.pretraining.dataset",
    "kbert.pretraining.documents",
    "kbert.pretraining.evaluation",
    "kbert.pretraining.instances",
    "kbert.pretraining.learning_curve",
    "kbert.pretraining.masking",
    "kbert.pretraining.pipeline",
    "kbert.pretraining.tfrecords",
    "kbert.pretraining.training",  # a training run; tests/pretraining checks each backend
)


def _doctests(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return module, [test for test in finder.find(module) if test.examples]


MODULES = [
    name
    for name in ["kbert"]
    + sorted(m.name for m in pkgutil.walk_packages(kbert.__path__, "kbert."))
    if _doctests(name)[1]
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    if name.startswith(ONCE_ON_TENSORFLOW) and keras.backend.backend() != "tensorflow":
        pytest.skip("export examples run once, in the TensorFlow run")
    if name.startswith(ONLY_ON_JAX) and keras.backend.backend() != "jax":
        pytest.skip("distribution examples are JAX's")
    if name.startswith(ONCE_ON_TORCH) and keras.backend.backend() != "torch":
        pytest.skip("backend-independent examples run once, in the PyTorch run")
    module, tests = _doctests(name)
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    try:
        for test in tests:
            source = "\n".join(example.source for example in test.examples)
            fixtures = docstring_fixtures.namespace(source)
            test.globs = {**fixtures, **vars(module)}
            runner.run(test, out=report.append)
    finally:
        keras.distribution.set_distribution(None)
        keras.config.set_dtype_policy("float32")
    assert not runner.failures, "".join(report)
