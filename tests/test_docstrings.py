"""Every docstring example in kbert runs (doctest), on the backend under test.

Examples run in a fresh working directory per module (so `out/...` paths
land there), with the module's globals and the fixtures of
`tests/docstring_fixtures.py` they name. Export examples write TensorFlow
artifacts whatever the backend, so the exporters' modules run once, in the
TensorFlow run.
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
ONLY_ON_JAX = ("kbert.pretraining.distribution",)


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
