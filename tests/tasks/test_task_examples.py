"""The task examples run end to end (`--smoke`: tiny random models, seconds)."""

import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name, metric",
    [
        ("ner_tagging", "accuracy"),
        ("question_answering", "exact_match"),
        ("multiple_choice", "accuracy"),
    ],
)
def test_example_smoke_run(name, metric, capsys):
    results = load(name).main(["--smoke"])
    assert 0.0 <= results[metric] <= 1.0
    printed = capsys.readouterr().out
    assert printed.strip(), "the example prints its results"
