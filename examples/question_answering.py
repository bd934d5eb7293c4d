"""Extractive question answering: fine-tune all-MiniLM-L6-v2 on hand-made facts.

There is no pretrained QA checkpoint here, so this fine-tunes the
sentence-transformers MiniLM encoder (`kbert.BertQuestionAnswerer.from_preset(
"all_minilm_l6_v2")`, a fresh span head) briefly on templated biographies
("Ada Turing was born in Paris in 1815 ." among filler sentences) with
where / when / what questions and an unanswerable "who taught" question,
using `fit` on raw (question, context) pairs and answer character spans. It
then answers questions about people it never saw, in biographies long enough
to need several windows (`doc_stride`), with n-best answers and SQuAD
2.0-style "no answer". Expect a toy: the questions are answerable from their
type alone, and a run here got 9 of 12 held-out questions (mixing up "where"
and "when" in the "born in <place> in <year>" sentence); it shows the
pipeline, not a SQuAD-trained model. Scores above 1 are spans found in
several windows, whose probabilities add up (as in Hugging Face's pipeline).

    python examples/question_answering.py            # ~2 minutes on CPU
    python examples/question_answering.py --smoke    # seconds: a tiny random model (tests)
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse
import random

import keras

import kbert
from kbert.preprocessing import BertPreprocessor, BertTokenizer

FIRST_NAMES = ["Ada", "Alan", "Grace", "Charles", "Emmy", "Rosalind", "Carl", "Lise", "Max"]
SURNAMES = ["Lovelace", "Turing", "Hopper", "Babbage", "Noether", "Franklin", "Gauss"]
TEST_PEOPLE = ["Marie Curie", "Niels Bohr", "Hedy Lamarr"]  # names never trained on
PLACES = ["London", "Paris", "New York", "Berlin", "Rome", "Vienna", "Warsaw"]
JOBS = ["mathematician", "physicist", "engineer", "inventor", "chemist", "actress"]
FACTS = [
    "{p} was born in {place} in {year} .",
    "{p} worked as a {job} .",
]
FILLER = [
    "The family owned a small bookshop near the river .",
    "Letters from that time are kept in a museum .",
    "Friends remember long walks and loud debates .",
    "A portrait hangs in the main hall of the library .",
    "Several streets and one school carry the name today .",
    "Travel was slow and most news came by post .",
]
QUESTIONS = {
    "place": "Where was {p} born?",
    "year": "When was {p} born?",
    "job": "What did {p} work as?",
    None: "Who taught {p}?",  # never stated: no answer
}


def biography(person, rng, filler_sentences):
    """`(values, text)`: a person's facts placed among filler sentences."""
    values = {
        "p": person,
        "place": rng.choice(PLACES),
        "year": str(rng.randrange(1800, 1950)),
        "job": rng.choice(JOBS),
    }
    sentences = [rng.choice(FILLER) for _ in range(filler_sentences)]
    for fact in FACTS:
        sentences.insert(rng.randrange(len(sentences) + 1), fact.format(**values))
    return values, " ".join(sentences)


def questions_about(values, text):
    """(question, context, answer_start, answer_end); start -1 = no answer."""
    examples = []
    for slot, question in QUESTIONS.items():
        if slot is None:
            examples.append((question.format(p=values["p"]), text, -1, -1))
            continue
        start = text.index(values[slot], text.index(values["p"]))
        examples.append(
            (question.format(p=values["p"]), text, start, start + len(values[slot]))
        )
    return examples


def tiny_answerer(texts):
    """A random 1-layer model over a vocabulary of the examples' words."""
    words = sorted({w for t in texts for w in t.lower().replace("?", " ? ").split()})
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    backbone = kbert.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=64,
    )
    preprocessor = BertPreprocessor(tokenizer, sequence_length=32)
    return kbert.BertQuestionAnswerer(backbone, preprocessor=preprocessor, doc_stride=8)


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

    people = [f"{first} {last}" for first in FIRST_NAMES for last in SURNAMES]
    train = []
    for person in rng.sample(people, 8 if args.smoke else 60):
        train += questions_about(*biography(person, rng, rng.randrange(4)))
    rng.shuffle(train)
    # Held-out people, each in a biography of several 64-piece windows.
    test = [biography(person, rng, 12) for person in TEST_PEOPLE]

    if args.smoke:
        qa = tiny_answerer(
            [text for _, text in test] + [q + " " + c for q, c, _, _ in train]
        )
        epochs = 1
    else:
        qa = kbert.BertQuestionAnswerer.from_preset(
            "all_minilm_l6_v2", sequence_length=64, doc_stride=16
        )
        qa.compile(optimizer=kbert.models.task.default_optimizer(learning_rate=2e-4))
        epochs = args.epochs
    questions, contexts, starts, ends = (list(column) for column in zip(*train))
    qa.fit(
        (questions, contexts),
        (starts, ends),
        batch_size=8,
        epochs=epochs,
        steps_per_epoch=1 if args.smoke else None,  # smoke: one compiled step
        verbose=0 if args.smoke else 2,
    )

    examples = [
        example for values, text in test for example in questions_about(values, text)
    ]
    questions, contexts, starts, ends = (list(column) for column in zip(*examples))
    expected = [c[s:e] if s >= 0 else "" for c, s, e in zip(contexts, starts, ends)]
    answers = qa.answer(
        questions, contexts, top_k=2, max_answer_length=8, handle_impossible_answer=True
    )
    lengths = ", ".join(str(len(text)) for _, text in test)
    print(f"held-out biographies of {lengths} characters, several windows each")
    for question, truth, found in zip(questions, expected, answers):
        best = ", ".join(
            f"{a['answer']!r} ({a['score']:.2f}, chars {a['start']}-{a['end']})"
            for a in found
        )
        print(f"{question:32s} expected {truth!r:16s} got {best}")
    correct = sum(found[0]["answer"] == truth for found, truth in zip(answers, expected))
    print(f"exact match on held-out people: {correct}/{len(expected)} ('' = no answer)")
    # What the score was computed from, for tests to check it.
    return {
        "exact_match": correct / len(expected),
        "contexts": contexts,
        "expected": expected,
        "answers": answers,
    }


if __name__ == "__main__":
    main()
