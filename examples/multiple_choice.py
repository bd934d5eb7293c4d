"""Multiple choice: fine-tune all-MiniLM-L6-v2 to pick the answer a text states.

There is no pretrained multiple-choice checkpoint here, so this fine-tunes
the sentence-transformers MiniLM encoder
(`kbert.BertMultipleChoice.from_preset("all_minilm_l6_v2", num_choices=3)`,
a fresh scoring head) for a minute on hand-made reading-comprehension items:
a prompt states a fact and asks about it ("Ada Lovelace was born in London .
Where was Ada Lovelace born?"), three candidate answers follow, each scored
as a (prompt, choice) pair. It then scores items about people and places it
never saw in training. Expect a toy: a run here picked all 24 held-out items
right, but the items only ask to find the stated place; it shows raw
(prompt, choices) in and per-choice logits out, not a SWAG-trained model.

    python examples/multiple_choice.py            # ~1 minute on CPU
    python examples/multiple_choice.py --smoke    # seconds: a tiny random model (tests)
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse
import random

import keras
import numpy as np

import kbert
from kbert.preprocessing import BertPreprocessor, BertTokenizer

TRAIN_PEOPLE = [
    "Ada Lovelace",
    "Alan Turing",
    "Grace Hopper",
    "Charles Babbage",
    "Emmy Noether",
]
TRAIN_PLACES = ["London", "Paris", "New York", "Berlin", "Rome", "Madrid"]
TEST_PEOPLE = ["Marie Curie", "Niels Bohr", "Hedy Lamarr"]
TEST_PLACES = ["Tokyo", "Oslo", "Lima", "Cairo"]
NUM_CHOICES = 3


def make_items(people, places, count, rng):
    """(prompt, choices, label) items: the right place among two others."""
    items = []
    for _ in range(count):
        person = rng.choice(people)
        right, *wrong = rng.sample(places, NUM_CHOICES)
        choices = wrong[:]
        label = rng.randrange(NUM_CHOICES)
        choices.insert(label, right)
        prompt = f"{person} was born in {right} . Where was {person} born?"
        items.append((prompt, choices, label))
    return items


def tiny_chooser(texts):
    """A random 1-layer model over a vocabulary of the items' words."""
    words = sorted({w for t in texts for w in t.lower().replace("?", " ? ").split()})
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    backbone = kbert.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    preprocessor = BertPreprocessor(tokenizer, sequence_length=24)
    return kbert.BertMultipleChoice(backbone, NUM_CHOICES, preprocessor=preprocessor)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)
    rng = random.Random(0)

    train = make_items(TRAIN_PEOPLE, TRAIN_PLACES, 16 if args.smoke else 96, rng)
    test = make_items(TEST_PEOPLE, TEST_PLACES, 4 if args.smoke else 24, rng)
    if args.smoke:
        chooser = tiny_chooser([p + " " + " ".join(c) for p, c, _ in train + test])
        epochs = 1
    else:
        chooser = kbert.BertMultipleChoice.from_preset(
            "all_minilm_l6_v2", num_choices=NUM_CHOICES, sequence_length=32
        )
        chooser.compile(optimizer=kbert.models.task.default_optimizer(learning_rate=1e-4))
        epochs = args.epochs
    prompts, choices, labels = (list(column) for column in zip(*train))
    chooser.fit(
        (prompts, choices),
        np.array(labels),
        batch_size=8,
        epochs=epochs,
        steps_per_epoch=1 if args.smoke else None,  # smoke: one compiled step
        verbose=0 if args.smoke else 2,
    )

    prompts, choices, labels = (list(column) for column in zip(*test))
    logits = np.asarray(chooser.predict((prompts, choices), verbose=0))
    picked = logits.argmax(axis=-1)
    for prompt, options, label, scores in list(zip(prompts, choices, labels, logits))[:4]:
        shown = ", ".join(f"{o} {s:+.2f}" for o, s in zip(options, scores))
        picked_option = options[int(scores.argmax())]
        print(f"{prompt}\n  [{shown}] -> {picked_option} (right: {options[label]})")
    accuracy = float((picked == np.array(labels)).mean())
    print(f"held-out accuracy: {accuracy:.3f} (chance {1 / NUM_CHOICES:.3f})")
    # What the accuracy was computed from, for tests to check it.
    return {"accuracy": accuracy, "logits": logits, "labels": labels}


if __name__ == "__main__":
    main()
