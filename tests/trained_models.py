"""Fine-tuned models that several tests share, trained once per code version.

The demo recipe's review classifier (all-MiniLM-L6-v2, 4,000 Rotten Tomatoes
reviews, one epoch) is what users quantize, LoRA-tune and export. It is
trained on PyTorch (the fastest trainer here) in a subprocess and saved as a
kbert preset under `.test-cache/`, keyed by a hash of this file and the
recipe's (a fresh clone trains it once; every backend's test run and every
xdist worker loads that one). Tests use it as "a fine-tuned classifier"; a
preset kbert can no longer load fails them loudly.

Run as a script, it trains into the directory given: `python
tests/trained_models.py DIR`.
"""

import hashlib
import os
import pathlib
import subprocess
import sys

from filelock import FileLock

ROOT = pathlib.Path(__file__).resolve().parents[1]
CACHE = ROOT / ".test-cache"


def _code_hash():
    digest = hashlib.sha256()
    recipe = ROOT / "kbert" / "finetuning"
    for path in [
        pathlib.Path(__file__),
        recipe / "sentiment_demo.py",
        recipe / "recipe.py",
    ]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def demo_classifier_preset():
    """The path of the demo recipe's trained classifier preset (trains it once)."""
    target = CACHE / f"demo_classifier-{_code_hash()}"
    CACHE.mkdir(exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / "task.json").exists():
            env = dict(os.environ, KERAS_BACKEND="torch", TF_CPP_MIN_LOG_LEVEL="3")
            subprocess.run(
                [sys.executable, __file__, str(target)], check=True, env=env, timeout=1800
            )
    return str(target)


def _train(directory):
    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE, LABELS, sentiment_splits

    splits = sentiment_splits(train_examples=4000, seed=DEMO_RECIPE.seed)
    model = build_classifier(DEMO_RECIPE, num_classes=2, num_examples=4000, id2label=LABELS)
    train_classifier(model, DEMO_RECIPE, splits["train"], verbose=0)
    model.save_to_preset(directory)


if __name__ == "__main__":
    _train(sys.argv[1])
