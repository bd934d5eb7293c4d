"""Named-entity tagging: fine-tune all-MiniLM-L6-v2 as a BIO tagger.

There is no pretrained NER checkpoint here, so this fine-tunes the
sentence-transformers MiniLM encoder (`kbert.BertTokenClassifier.from_preset(
"all_minilm_l6_v2", num_classes=5)`, a fresh tagging head) for a minute on a
small hand-made set of templated sentences with PER and LOC entities, then
tags sentences built from names and places it never saw in training and
prints word tags and entity spans. Expect a toy: a run here reached 0.88
held-out word accuracy, with "Buenos Aires" split into two places; it shows
the pipeline (words in, BIO tags and character spans out), not a real NER
model.

    python examples/ner_tagging.py            # ~1-2 minutes on CPU
    python examples/ner_tagging.py --smoke    # seconds: a tiny random model (tests)
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse
import itertools
import re

import keras

import kbert
from kbert.preprocessing import BertPreprocessor, BertTokenizer

LABELS = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
TRAIN_PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Charles Babbage", "Emmy"]
TRAIN_PLACES = ["London", "Paris", "New York", "Berlin", "Rome"]
TEST_PEOPLE = ["Marie Curie", "Niels Bohr", "Hedy Lamarr"]
TEST_PLACES = ["Tokyo", "Buenos Aires", "Oslo"]
TEMPLATES = [
    "{person} moved to {place} last year .",
    "In {place} , {person} gave a long talk .",
    "{person} was born in {place}",
    "The museum in {place} honours {person} .",
    "Yesterday {person} flew from {place} to {place2} .",
]


def tag_entity(text, kind):
    words = text.split()
    return words, [f"B-{kind}"] + [f"I-{kind}"] * (len(words) - 1)


def make_examples(people, places):
    """(words, tags) pairs from every template, person and place."""
    examples = []
    for template, person, place in itertools.product(TEMPLATES, people, places):
        place2 = places[(places.index(place) + 1) % len(places)]
        words, tags = [], []
        for token in template.split():
            slot = re.fullmatch(r"\{(\w+)\}", token)
            if slot is None:
                words.append(token)
                tags.append("O")
                continue
            value = {"person": person, "place": place, "place2": place2}[slot.group(1)]
            entity_words, entity_tags = tag_entity(
                value, "PER" if slot.group(1) == "person" else "LOC"
            )
            words += entity_words
            tags += entity_tags
        examples.append((words, tags))
    return examples


def tiny_tagger(examples):
    """A random 1-layer model over a vocabulary of the examples' words."""
    words = sorted({w.lower() for ws, _ in examples for w in ws})
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
    return kbert.BertTokenClassifier(
        backbone, num_classes=len(LABELS), preprocessor=preprocessor, id2label=LABELS
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)

    train = make_examples(TRAIN_PEOPLE, TRAIN_PLACES)
    test = make_examples(TEST_PEOPLE, TEST_PLACES)
    if args.smoke:
        tagger = tiny_tagger(train + test)
        train, test, epochs = train[:8], test[:2], 1
    else:
        tagger = kbert.BertTokenClassifier.from_preset(
            "all_minilm_l6_v2", num_classes=len(LABELS), id2label=LABELS, sequence_length=32
        )
        tagger.compile(optimizer=kbert.models.task.default_optimizer(learning_rate=1e-4))
        epochs = args.epochs
    train_words = [words for words, _ in train]
    train_tags = [tags for _, tags in train]
    tagger.fit(
        train_words,
        train_tags,
        batch_size=8,
        epochs=epochs,
        steps_per_epoch=1 if args.smoke else None,  # smoke: one compiled step
        verbose=0 if args.smoke else 2,
    )

    test_words = [words for words, _ in test]
    predicted = tagger.predict_words(test_words, batch_size=64)
    pairs = [(p, t) for row, (_, tags) in zip(predicted, test) for p, t in zip(row, tags)]
    accuracy = sum(p == t for p, t in pairs) / len(pairs)
    print(f"held-out word accuracy: {accuracy:.3f} over {len(pairs)} words")
    sentences = [" ".join(words) for words in test_words[:3]]
    for sentence, tags, spans in zip(
        sentences, predicted, tagger.predict_entities(sentences)
    ):
        print(sentence)
        print("  tags:    ", " ".join(tags))
        print(
            "  entities:", [(s["entity"], s["text"], s["start"], s["end"]) for s in spans]
        )
    # What the accuracy was computed from, for tests to check it.
    return {
        "accuracy": accuracy,
        "words": test_words,
        "predicted": predicted,
        "tags": [tags for _, tags in test],
    }


if __name__ == "__main__":
    main()
