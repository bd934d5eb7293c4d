"""The task examples run end to end (`--smoke`: tiny random models, seconds).

A smoke run trains one step of a random model, so its score says nothing of
learning; what it must show is that the score is the one its predictions
give, and that those predictions are well formed for the held-out data.
The examples are backend-agnostic scripts over the tested library: they run
once, in the PyTorch run.
"""

import importlib.util
import os

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

pytestmark = pytest.mark.backend_independent


def load(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_ner(module, results):
    words, predicted, tags = results["words"], results["predicted"], results["tags"]
    assert len(predicted) == len(words) == 2  # the smoke run's held-out sentences
    for row, sentence in zip(predicted, words):
        assert len(row) == len(sentence)  # one tag per word, subwords folded
        assert set(row) <= set(module.LABELS.values())
    pairs = [(p, t) for row, gold in zip(predicted, tags) for p, t in zip(row, gold)]
    assert len(pairs) == sum(len(sentence) for sentence in words)
    accuracy = sum(p == t for p, t in pairs) / len(pairs)
    return accuracy, f"held-out word accuracy: {accuracy:.3f} over {len(pairs)} words"


def check_question_answering(module, results):
    contexts, expected, answers = (
        results["contexts"],
        results["expected"],
        results["answers"],
    )
    assert len(answers) == len(contexts) == len(expected) > 0
    for context, found in zip(contexts, answers):
        assert len(found) == 2  # top_k=2
        assert found[0]["score"] >= found[1]["score"]
        for answer in found:  # an answer is the text at its character offsets
            if answer["answer"]:
                assert context[answer["start"] : answer["end"]] == answer["answer"]
    correct = sum(found[0]["answer"] == truth for found, truth in zip(answers, expected))
    printed = f"exact match on held-out people: {correct}/{len(expected)}"
    return correct / len(expected), printed


def check_multiple_choice(module, results):
    logits, labels = np.asarray(results["logits"]), results["labels"]
    assert logits.shape == (4, module.NUM_CHOICES) and np.all(np.isfinite(logits))
    assert np.ptp(logits, axis=-1).min() > 0  # the choices are scored apart
    accuracy = float(np.mean(logits.argmax(-1) == np.array(labels)))
    return accuracy, f"held-out accuracy: {accuracy:.3f}"


@pytest.mark.parametrize(
    "name, metric, check",
    [
        ("ner_tagging", "accuracy", check_ner),
        ("question_answering", "exact_match", check_question_answering),
        ("multiple_choice", "accuracy", check_multiple_choice),
    ],
)
def test_example_smoke_run(name, metric, check, capsys):
    module = load(name)
    results = module.main(["--smoke"])
    value, printed_with = check(module, results)
    assert results[metric] == pytest.approx(value)  # the score its predictions give
    printed = capsys.readouterr().out
    assert printed_with in printed, "the example prints the score it returns"
