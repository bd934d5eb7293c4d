"""Extractive question answering: fine-tune all-MiniLM-L6-v2 on hand-made facts.

There is no pretrained QA checkpoint here, so this fine-tunes the
sentence-transformers MiniLM encoder (`kbert.BertQuestionAnswerer.from_preset(
"all_minilm_l6_v2")`, a fresh span head) for three short epochs on templated
facts ("Ada Turing was born in Paris in 1815 .") with where / when / what
questions, some unanswerable, using `fit` on raw (question, context) pairs
and answer character spans. It then answers questions about people it never
saw in training over one long context that needs several windows
(`doc_stride`), with n-best answers and SQuAD 2.0-style "no answer". Expect a
toy: a run here got 3 of the 9 held-out questions right and did not learn
"no answer" in that time; it shows the pipeline, not a SQuAD-trained model.
Scores above 1 are spans found in several windows, whose probabilities add
up (as in Hugging Face's pipeline).

    python examples/question_answering.py            # ~2-3 minutes on CPU
    python examples/question_answering.py --smoke    # seconds: a tiny random model (tests)
"""

import argparse
import random

import keras

import kbert
from kbert.preprocessing import BertPreprocessor, BertTokenizer

# Training people combine the first names and surnames of the first lists;
# held-out people come from names never seen in training.
FIRST_NAMES = ["Ada", "Alan", "Grace", "Charles", "Emmy", "Rosalind", "Carl", "Lise", "Max"]
SURNAMES = ["Lovelace", "Turing", "Hopper", "Babbage", "Noether", "Franklin", "Gauss"]
TEST_PEOPLE = ["Marie Curie", "Niels Bohr", "Hedy Lamarr"]
PLACES = ["London", "Paris", "New York", "Berlin", "Rome", "Vienna", "Warsaw"]
JOBS = ["mathematician", "physicist", "engineer", "inventor", "chemist", "actress"]
FACTS = {
    "where": ("{p} was born in {place} in {year} .", "Where was {p} born?", "place"),
    "when": ("{p} was born in {place} in {year} .", "When was {p} born?", "year"),
    "what": ("{p} worked as a {job} .", "What did {p} work as?", "job"),
}


def person_facts(person, rng):
    values = {
        "p": person,
        "place": rng.choice(PLACES),
        "year": str(rng.randrange(1800, 1950)),
        "job": rng.choice(JOBS),
    }
    return values, " ".join(
        dict.fromkeys(template.format(**values) for template, _, _ in FACTS.values())
    )


def make_examples(people, rng):
    """(question, context, answer_start, answer_end) tuples; start -1 = no answer.

    Each context states the facts of two people; each person gets the three
    questions and one question about somebody the context does not mention.
    """
    examples = []
    for person in people:
        values, facts = person_facts(person, rng)
        other, stranger = rng.sample([p for p in people if p != person], 2)
        distractor = person_facts(other, rng)[1]
        context = f"{facts} {distractor}" if rng.random() < 0.5 else f"{distractor} {facts}"
        own = context.index(f"{person} ")
        for _, question, slot in FACTS.values():
            start = context.index(values[slot], own)
            examples.append(
                (question.format(p=person), context, start, start + len(values[slot]))
            )
        examples.append((f"Where was {stranger} born?", context, -1, -1))
    rng.shuffle(examples)
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
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)
    rng = random.Random(0)

    train_people = [f"{first} {last}" for first in FIRST_NAMES for last in SURNAMES]
    train = make_examples(rng.sample(train_people, 12 if args.smoke else 60), rng)
    test_values = {p: person_facts(p, rng) for p in TEST_PEOPLE}
    long_context = " ".join(
        facts
        for _, facts in list(test_values.values())
        + [person_facts(p, rng) for p in rng.sample(train_people, 5)]
    )
    if args.smoke:
        qa = tiny_answerer([long_context] + [q + " " + c for q, c, _, _ in train])
        train, epochs = train[:10], 1
    else:
        qa = kbert.BertQuestionAnswerer.from_preset(
            "all_minilm_l6_v2", sequence_length=64, doc_stride=16
        )
        qa.compile(optimizer=kbert.models.task.default_optimizer(learning_rate=3e-4))
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

    test_questions, expected = [], []
    for person, (values, _) in test_values.items():
        for _, question, slot in FACTS.values():
            test_questions.append(question.format(p=person))
            expected.append(values[slot])
    # One batch of windows: the held-out questions and one nobody can answer.
    unanswerable = "Where was Alan Kay born?"
    answers = qa.answer(
        test_questions + [unanswerable],
        long_context,
        top_k=2,
        max_answer_length=8,
        handle_impossible_answer=True,
    )
    correct = sum(found[0]["answer"] == truth for found, truth in zip(answers, expected))
    print(f"long context: {len(long_context)} characters, several windows")
    for question, truth, found in zip(
        test_questions + [unanswerable], expected + [""], answers
    ):
        best = ", ".join(
            f"{a['answer']!r} ({a['score']:.2f}, chars {a['start']}-{a['end']})"
            for a in found
        )
        print(f"{question:32s} expected {truth!r:18s} got {best}")
    print(f"exact match on held-out people: {correct}/{len(expected)} ('' = no answer)")
    return {"exact_match": correct / len(expected)}


if __name__ == "__main__":
    main()
