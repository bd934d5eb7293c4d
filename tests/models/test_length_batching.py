"""Raw samples run in length buckets and give what the fixed-length path gives.

The reference in every test is the same model run by Keras on the features
padded to the preprocessor's full `sequence_length` (the path kbert took
before length bucketing).
"""

import keras
import numpy as np
import pytest

import kbert
from kbert.models import bucketed_predict, length_batching
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from tests.test_case import randomized, tiny_backbone

WORDS = "good great fun bad dull awful movie plot the a was very not".split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
SEQUENCE_LENGTH = 64
TOLERANCE = 1e-5


def random_texts(count, seed):
    """Texts of 1 to 55 words: their lengths span every bucket up to 64."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 56))) for _ in range(count)]


def preprocessor():
    return BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=SEQUENCE_LENGTH)


def backbone(**overrides):
    return tiny_backbone(
        vocabulary_size=len(VOCABULARY), max_sequence_length=64, **overrides
    )


def cross_entropy(logits, labels):
    """Mean cross-entropy of the logits over the labelled positions (-100:
    none), in NumPy."""
    logits, labels = np.asarray(logits, "float64"), np.asarray(labels)
    real = labels != -100
    logits, labels = logits[real], labels[real]
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.mean(log_p[np.arange(len(labels)), labels])


def fixed_length_outputs(model, features):
    """The reference: Keras' own predict on full-length features."""
    return keras.Model.predict(model, features, batch_size=8, verbose=0)


def assert_matches_fixed(model, bucketed, reference, features):
    """Equal within TOLERANCE on real tokens, zeros on padding, same argmax."""
    axis = model.output_sequence_axis
    for actual, expected in zip(
        keras.tree.flatten(bucketed), keras.tree.flatten(reference)
    ):
        assert actual.shape == expected.shape
        if axis is not None:
            real = np.asarray(features["padding_mask"]).astype(bool)
            real = np.expand_dims(real, tuple(range(1, axis)))
            real = np.expand_dims(real, tuple(range(axis + 1, actual.ndim)))
            real = np.broadcast_to(real, actual.shape)
            np.testing.assert_array_equal(actual[~real], 0.0)
            actual, expected = actual[real], expected[real]
        np.testing.assert_allclose(actual, expected, atol=TOLERANCE, rtol=0)
        if actual.ndim >= 2:
            np.testing.assert_array_equal(actual.argmax(-1), expected.argmax(-1))


@pytest.mark.parametrize(
    "build",
    [
        lambda: kbert.BertClassifier(backbone(), 3, preprocessor=preprocessor()),
        lambda: kbert.BertTextEmbedder(backbone(), preprocessor=preprocessor()),
        lambda: kbert.BertTokenClassifier(backbone(), 4, preprocessor=preprocessor()),
        lambda: kbert.BertFeatureExtractor(
            backbone(), layers=(-1, -2), preprocessor=preprocessor()
        ),
    ],
    ids=["classifier", "embedder", "token_classifier", "feature_extractor"],
)
def test_bucketed_predict_equals_fixed_length(build):
    model = build()
    texts = random_texts(37, seed=0)
    features = model._raw_arrays(texts)[0]
    bucketed = model.predict(texts, batch_size=8, verbose=0)
    assert_matches_fixed(model, bucketed, fixed_length_outputs(model, features), features)


def test_bucketed_predict_of_pairs_and_choices():
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    pairs = (random_texts(19, seed=1), random_texts(19, seed=2))
    features = classifier._raw_arrays(pairs)[0]
    assert_matches_fixed(
        classifier,
        classifier.predict(pairs, batch_size=8, verbose=0),
        fixed_length_outputs(classifier, features),
        features,
    )
    chooser = kbert.BertMultipleChoice(backbone(), 3, preprocessor=preprocessor())
    prompts = random_texts(11, seed=3)
    choices = np.array(random_texts(33, seed=4), dtype=object).reshape(11, 3).tolist()
    features = chooser._raw_arrays((prompts, choices))[0]
    assert features["token_ids"].shape == (11, 3, SEQUENCE_LENGTH)
    assert_matches_fixed(
        chooser,
        chooser.predict((prompts, choices), batch_size=4, verbose=0),
        fixed_length_outputs(chooser, features),
        features,
    )


def _with_fixed_length_predict(model, monkeypatch):
    """Makes `model.predict_features` take the fixed-length path."""
    monkeypatch.setattr(
        model,
        "predict_features",
        lambda features, batch_size=None: fixed_length_outputs(model, features),
    )


def test_ner_spans_and_qa_answers_equal_fixed_length(monkeypatch):
    labels = {0: "O", 1: "B-X", 2: "I-X"}
    tagger = kbert.BertTokenClassifier(
        backbone(), 3, preprocessor=preprocessor(), id2label=labels
    )
    texts = random_texts(21, seed=5)
    bucketed_words = tagger.predict_words(texts, batch_size=8)
    bucketed_spans = tagger.predict_entities(texts, batch_size=8)

    qa = kbert.BertQuestionAnswerer(backbone(), preprocessor=preprocessor())
    questions = [" ".join(text.split()[:6]) for text in random_texts(9, seed=6)]
    contexts = [" ".join([text] * 3) for text in random_texts(9, seed=7)]  # several windows
    bucketed_answers = qa.answer(questions, contexts, top_k=2, batch_size=4)

    _with_fixed_length_predict(tagger, monkeypatch)
    _with_fixed_length_predict(qa, monkeypatch)
    assert tagger.predict_words(texts) == bucketed_words
    assert tagger.predict_entities(texts) == bucketed_spans
    reference = qa.answer(questions, contexts, top_k=2)
    for found, expected in zip(bucketed_answers, reference):
        assert [(a["answer"], a["start"], a["end"]) for a in found] == [
            (a["answer"], a["start"], a["end"]) for a in expected
        ]
        np.testing.assert_allclose(
            [a["score"] for a in found], [a["score"] for a in expected], atol=1e-5
        )


def test_compiled_shapes_stay_bounded(monkeypatch):
    """Under XLA-tracing backends, a bounded set of shapes whatever the
    texts; on torch (eager) each batch is exactly its longest row."""
    model = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    shapes = set()
    longest = []  # (batch length, longest real row) per batch
    original = bucketed_predict.inference_function

    def recording(*args):
        forward = original(*args)

        def run(features):
            shapes.add(features["token_ids"].shape)
            real = np.asarray(features["padding_mask"]).sum(axis=-1).max()
            longest.append((features["token_ids"].shape[1], int(real)))
            return forward(features)

        return run

    monkeypatch.setattr(bucketed_predict, "inference_function", recording)
    counts = (1, 3, 7, 8, 9, 20, 33, 50)
    for count in counts:
        model.predict(random_texts(count, seed=count), batch_size=8, verbose=0)
    if not bucketed_predict.compiles_per_shape():
        assert all(length == real for length, real in longest), longest
        assert len(longest) == sum(-(-count // 8) for count in counts)
        return
    lengths = length_batching.bucket_lengths(SEQUENCE_LENGTH)
    rows = (1, 2, 4, 8)
    assert {shape[0] for shape in shapes} <= set(rows)
    assert {shape[1] for shape in shapes} <= set(lengths)
    assert len(shapes) <= len(lengths) * len(rows)
    if keras.backend.backend() == "jax":  # one XLA program per shape seen
        assert model._kbert_inference[True]._cache_size() == len(shapes)


def test_predict_compiles_with_xla_once_the_job_is_long(monkeypatch):
    """By default `predict` compiles with XLA as `fastest_jit_compile` says
    for the rows the task will have predicted, earlier calls included (on
    TensorFlow: from `XLA_AFTER_ROWS`); an explicit `compile(jit_compile=...)`
    holds whatever the size, and `run_eagerly=True` compiles nothing. The
    outputs do not depend on the choice."""
    from kbert.models import backbone as backbone_module

    monkeypatch.setattr(backbone_module, "XLA_AFTER_ROWS", 12)
    model = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    texts = random_texts(3, seed=4)
    expected = fixed_length_outputs(model, model.preprocessor(texts))
    compiled = []  # the `jit_compile` keys of the compiled functions after each call
    for _ in range(5):  # rows predicted after each call: 3, 6, 9, 12, 15
        np.testing.assert_allclose(
            model.predict(texts, verbose=0), expected, atol=TOLERANCE
        )
        compiled.append(sorted(model.__dict__.get("_kbert_inference", {})))
    backend = keras.backend.backend()
    if backend == "tensorflow":
        assert compiled == [[False]] * 3 + [[False, True]] * 2
    elif backend == "jax":
        assert compiled == [[True]] * 5
    else:  # eager, no compiled function
        assert compiled == [[]] * 5
    model.compile(jit_compile=False)
    model.__dict__.pop("_kbert_inference", None)
    np.testing.assert_allclose(model.predict(texts, verbose=0), expected, atol=TOLERANCE)
    assert sorted(model.__dict__.get("_kbert_inference", {})) == (
        [] if backend == "torch" else [False]
    )
    # `run_eagerly=True` (debugging) holds for `predict` as for `fit`:
    # no compiled function, the same outputs.
    model.compile(run_eagerly=True)
    model.__dict__.pop("_kbert_inference", None)
    np.testing.assert_allclose(model.predict(texts, verbose=0), expected, atol=TOLERANCE)
    assert "_kbert_inference" not in model.__dict__


def test_predict_keeps_input_order_for_a_raw_dataset():
    import tensorflow as tf

    model = kbert.BertTextEmbedder(backbone(), preprocessor=preprocessor())
    texts = random_texts(21, seed=8)
    in_memory = model.predict(texts, batch_size=8, verbose=0)
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(5)
    np.testing.assert_allclose(model.predict(dataset, verbose=0), in_memory, atol=TOLERANCE)


def test_empty_list_and_bare_string():
    model = kbert.BertClassifier(backbone(), 3, preprocessor=preprocessor())
    assert model.predict([], verbose=0).shape == (0, 3)
    tagger = kbert.BertTokenClassifier(backbone(), 4, preprocessor=preprocessor())
    assert tagger.predict([], verbose=0).shape == (0, SEQUENCE_LENGTH, 4)
    one = model.predict("good fun movie", verbose=0)
    np.testing.assert_allclose(one, model.predict(["good fun movie"], verbose=0))
    assert one.shape == (1, 3)


def test_training_batches_cover_every_row_once_and_group_by_length():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 129, 1000)
    first = length_batching.training_batches(lengths, 8, 128, np.random.RandomState(0))
    second = length_batching.training_batches(lengths, 8, 128, np.random.RandomState(1))
    for batches in (first, second):
        rows = np.concatenate(batches)
        assert sorted(rows.tolist()) == list(range(1000))
        assert sum(len(b) < 8 for b in batches) <= 1
    assert [b.tolist() for b in first] != [b.tolist() for b in second]
    # Grouped: most batches hold a single bucket length.
    buckets = np.array([length_batching.bucket_length(n, 128) for n in lengths])
    single = sum(len(set(buckets[b])) == 1 for b in first)
    assert single >= 0.8 * len(first)
    # Padding a grouped batch to its bucket wastes far less than padding to 128.
    padded = sum(
        len(b) * length_batching.bucket_length(lengths[b].max(), 128) for b in first
    )
    assert padded < 0.7 * 128 * len(lengths)


@pytest.mark.eager_on_tensorflow  # tests/conftest.py
def test_fit_and_evaluate_run_in_buckets():
    # Random weights: logits that differ from text to text, so that losses
    # tell labels apart (a new head's are near zero: log 2 for any labels).
    model = randomized(kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor()))
    texts = random_texts(40, seed=9)
    labels = np.arange(40) % 2
    features = model._raw_arrays(texts)[0]
    dataset = model._bucketed_dataset(features, labels, None, 8, shuffle=True)
    if keras.backend.backend() == "tensorflow":
        epochs = [list(dataset.as_numpy_iterator()) for _ in range(2)]
    else:  # a keras.utils.PyDataset: no TensorFlow threads beside the training step
        epochs = []
        for _ in range(2):
            epochs.append([dataset[i] for i in range(len(dataset))])
            dataset.on_epoch_end()
    for epoch in epochs:
        widths = [x["token_ids"].shape[1] for x, _ in epoch]
        assert set(widths) <= set(length_batching.bucket_lengths(SEQUENCE_LENGTH))
        assert sum(len(y) for _, y in epoch) == 40
    assert [y.tolist() for _, y in epochs[0]] != [y.tolist() for _, y in epochs[1]]

    bucketed = model.evaluate(texts, labels, batch_size=8, verbose=0)
    fixed = keras.Model.evaluate(model, features, labels, batch_size=8, verbose=0)
    np.testing.assert_allclose(bucketed, fixed, atol=TOLERANCE)
    history = model.fit(
        texts, labels, batch_size=8, epochs=2, validation_split=0.25, verbose=0
    )
    # Validated on the last quarter of the texts, by the trained model.
    held_out = model.predict(texts[30:], batch_size=8, verbose=0)
    np.testing.assert_allclose(
        history.history["val_loss"][-1], cross_entropy(held_out, labels[30:]), rtol=1e-5
    )


@pytest.mark.eager_on_tensorflow  # tests/conftest.py
def test_token_labels_are_cut_with_their_batch():
    """Token labels are padded to `sequence_length`; fit and evaluate cut
    them with their batch (here 64 -> 16), aligned with the tokens: each
    loss is the cross-entropy of predict's outputs over the labelled tokens."""
    import tensorflow as tf

    # No dropout: the loss fit reports for its one step is that of predict.
    tagger = kbert.BertTokenClassifier(
        backbone(dropout=0.0, attention_dropout=0.0),
        3,
        preprocessor=preprocessor(),
        dropout=0.0,
        id2label={0: "O", 1: "B-X", 2: "I-X"},
    )
    randomized(tagger)  # logits that tell labels apart
    texts = [" ".join(text.split()[:12]) for text in random_texts(16, seed=10)]
    tags = [["B-X" if i % 3 == 0 else "O" for i, _ in enumerate(t.split())] for t in texts]
    padded = kbert.models.token_alignment.pad_word_labels(tags, texts, tagger.label2id)
    features, labels, _ = tagger._raw_arrays(texts, padded)
    assert labels.shape == (16, SEQUENCE_LENGTH)
    dataset = tagger._bucketed_dataset(features, labels, None, 16, shuffle=True)
    if keras.backend.backend() == "tensorflow":
        batches = list(dataset.as_numpy_iterator())
    else:
        batches = [dataset[i] for i in range(len(dataset))]
    assert len(batches) == 1  # one batch of 16, cut to 16 tokens, its labels too
    assert batches[0][0]["token_ids"].shape == batches[0][1].shape == (16, 16)
    before = cross_entropy(tagger.predict(texts, verbose=0), labels)
    history = tagger.fit(texts, tags, batch_size=16, epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [before], rtol=1e-5)
    after = cross_entropy(tagger.predict(texts, verbose=0), labels)
    assert after < before  # the step learned from the labels it was given
    dataset = tf.data.Dataset.from_tensor_slices((texts, padded)).batch(16)
    scores = tagger.evaluate(dataset, verbose=0, return_dict=True)
    np.testing.assert_allclose(scores["loss"], after, rtol=1e-5)


@pytest.fixture(scope="module")
def minilm_embedder():
    return kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")


def test_minilm_embeddings_on_real_text_equal_fixed_length(minilm_embedder):
    """All-MiniLM-L6-v2 on real reviews and long plot summaries: bucketed
    equals fixed-length, and both equal sentence-transformers' `encode`."""
    import sentence_transformers

    from kbert.data import rotten_tomatoes
    from kbert.sources import resolve_preset

    reviews, _ = rotten_tomatoes(categories=("fresh", "rotten"))
    plots, _ = rotten_tomatoes(categories=("plot",))
    texts = reviews[:100] + [plot for plot in plots if plot][:20]
    # sentence-transformers truncates this model at 256 word pieces; so does kbert.
    assert minilm_embedder.preprocessor.sequence_length == 256
    features = minilm_embedder._raw_arrays(texts)[0]
    lengths = length_batching.token_lengths(features)
    assert lengths.min() < 16 and lengths.max() == 256  # short and truncated texts
    bucketed = minilm_embedder.predict(texts, batch_size=32, verbose=0)
    # The fixed-length reference runs every text at 256 tokens (the test's
    # cost), so it runs one batch: every 4th text in length order (the
    # shortest first) and the two longest (truncated), across the range.
    by_length = np.argsort(lengths, kind="stable")
    subset = np.unique(np.concatenate([by_length[::4], by_length[-2:]]))
    assert len(subset) <= 32  # one batch of predict's default batch_size
    reference = keras.Model.predict(
        minilm_embedder, {k: v[subset] for k, v in features.items()}, verbose=0
    )
    difference = float(np.max(np.abs(bucketed[subset] - reference)))
    reference = sentence_transformers.SentenceTransformer(
        resolve_preset("all_minilm_l6_v2"), device="cpu"
    ).encode(texts, batch_size=32)
    cosines = np.sum(bucketed * reference, -1) / (
        np.linalg.norm(bucketed, axis=-1) * np.linalg.norm(reference, axis=-1)
    )
    print(
        f"\n[{keras.backend.backend()}] MiniLM bucketed vs fixed max |diff| {difference:.1e} "
        f"({len(subset)} texts); "
        f"vs sentence-transformers worst cosine {cosines.min():.8f}"
    )
    assert difference < TOLERANCE
    assert cosines.min() >= 0.99999
