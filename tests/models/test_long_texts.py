"""Texts longer than the sequence length: a TruncationWarning, or windows.

Windows are checked against a reference built in the test: Hugging Face
`tokenizers` cuts each text into overflowing windows (`enable_truncation`
with `stride`), the model runs window by window, and the outputs are joined
as the test says they should be.
"""

import warnings

import keras
import numpy as np
import pytest

import kbert
from kbert.inference.pipeline import TokenClassificationPipeline
from kbert.models.backbone import INPUT_NAMES
from tests.test_case import randomized, tiny_backbone

pytestmark = pytest.mark.eager_on_tensorflow  # tests/conftest.py

VOCABULARY = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the a fox dog cat jump ##s ##ed big small red "
    "blue river sat on mat and , ."
).split()
LENGTH = 12  # sequence_length: 10 word pieces a window
SHORT = ["the fox jumps", "a big red dog", "cat sat on the mat"]
LONG = (
    "the big red fox jumps on the small blue dog , and the cat sat on the mat . "
    "a dog jumped on the river and a small cat sat ."
)
TEXTS = [SHORT[0], LONG, SHORT[1], LONG[:40], SHORT[2]]


def preprocessor():
    tokenizer = kbert.BertTokenizer(VOCABULARY)
    return kbert.BertPreprocessor(tokenizer, sequence_length=LENGTH)


def backbone():
    return randomized(tiny_backbone(vocabulary_size=len(VOCABULARY)), seed=3)


def hf_windows(tmp_path, text, stride, length=LENGTH):
    """Overflowing windows of `tokenizers`: `(ids, first piece index)` each."""
    from tokenizers import BertWordPieceTokenizer

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    tokenizer = BertWordPieceTokenizer(str(path), lowercase=True)
    tokenizer.enable_truncation(length, stride=stride)
    encoding = tokenizer.encode(text)
    ids = [encoding.ids] + [window.ids for window in encoding.overflowing]
    starts = [0]
    for _ in ids[1:]:
        starts.append(starts[-1] + (length - 2) - stride)
    return ids, starts


def run_windows(model, windows, segment_ids=None):
    """The model on each window (a list of token ids), one at a time, padded
    to LENGTH as `tokenizers` pads them (`padding="max_length"`): one input
    shape, which eager JAX compiles once. Per-token outputs come back cut to
    the window's tokens."""
    segment_ids = segment_ids or [[0] * len(ids) for ids in windows]
    outputs = []
    for ids, segments in zip(windows, segment_ids):
        pad = [0] * (LENGTH - len(ids))
        features = {
            "token_ids": np.array([list(ids) + pad], "int32"),
            "segment_ids": np.array([list(segments) + pad], "int32"),
            "padding_mask": np.array([[1] * len(ids) + pad], "int32"),
        }
        output = keras.ops.convert_to_numpy(model(features, training=False))[0]
        axis = model.output_sequence_axis
        if axis is not None:
            output = np.take(output, np.arange(len(ids)), axis=axis - 1)
        outputs.append(output)
    return outputs


def caught(function, *args):
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        function(*args)
    return [w for w in found if issubclass(w.category, kbert.TruncationWarning)]


def test_one_warning_counts_the_truncated_texts():
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    found = caught(lambda: classifier.predict(TEXTS, verbose=0))
    assert len(found) == 1
    message = found[0].message
    assert (message.truncated, message.total) == (1, len(TEXTS))
    assert message.longest == len(classifier.preprocessor.tokenizer.tokenize(LONG)) + 2
    assert "1 of 5 texts" in str(message) and 'long_texts="windows"' in str(message)
    assert "sequence_length" in str(message)
    assert not caught(lambda: classifier.predict(SHORT, verbose=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", kbert.TruncationWarning)
        classifier.predict(SHORT, verbose=0)
        with pytest.raises(kbert.TruncationWarning, match="1 of 5 texts"):
            classifier.predict(TEXTS, verbose=0)


def test_every_raw_text_path_warns_once():
    y = np.array([0, 1, 0, 1, 0])
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    assert len(caught(lambda: classifier.evaluate(TEXTS, y, verbose=0))) == 1
    assert len(caught(lambda: classifier.fit(TEXTS, y, epochs=1, verbose=0))) == 1
    # training and validation texts cut in one call: one warning, counts summed
    (warning,) = caught(
        lambda: classifier.fit(
            TEXTS, y, validation_data=(TEXTS[:2], y[:2]), epochs=1, verbose=0
        )
    )
    one = caught(lambda: classifier.evaluate(TEXTS, y, verbose=0))[0].message
    held_out = caught(lambda: classifier.evaluate(TEXTS[:2], y[:2], verbose=0))
    assert warning.message.total == len(TEXTS) + 2
    assert warning.message.truncated == one.truncated + (
        held_out[0].message.truncated if held_out else 0
    )
    embedder = kbert.BertTextEmbedder(backbone(), preprocessor=preprocessor())
    assert len(caught(lambda: embedder.predict(TEXTS, verbose=0))) == 1
    extractor = kbert.BertFeatureExtractor(
        backbone(), layers=(-1,), preprocessor=preprocessor()
    )
    assert len(caught(lambda: extractor.predict(TEXTS, verbose=0))) == 1
    tagger = kbert.BertTokenClassifier(backbone(), 3, preprocessor=preprocessor())
    assert len(caught(lambda: tagger.predict(TEXTS, verbose=0))) == 1
    for task, model in [
        ("text-classification", classifier),
        ("sentence-embeddings", embedder),
        ("feature-extraction", extractor),
        ("token-classification", tagger),
    ]:
        run = kbert.pipeline(task, model)
        assert len(caught(run, TEXTS)) == 1, task
        assert not caught(run, SHORT), task


def counts(warning):
    message = warning.message
    return message.truncated, message.total, message.longest, message.limit_name


def test_a_tf_data_dataset_of_raw_samples_counts_what_it_cuts():
    """Counted in the tf.data graph as batches are made: one warning when the
    call ends, every text counted each time it is read (each epoch)."""
    import tensorflow as tf

    y = np.array([0, 1, 0, 1, 0])
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    (eager,) = caught(lambda: classifier.predict(TEXTS, verbose=0))
    truncated, total, longest, name = counts(eager)
    assert (truncated, total) == (1, 5)
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, y)).batch(2)
    texts = dataset.map(lambda x, _: x)
    for run, reads in [
        (lambda: classifier.predict(texts, verbose=0), 1),
        (lambda: classifier.evaluate(dataset, verbose=0), 1),
        # two epochs, each reading the training and the validation texts
        (lambda: classifier.fit(dataset, validation_data=dataset, epochs=2, verbose=0), 4),
    ]:
        (warning,) = caught(run)
        assert counts(warning) == (reads * truncated, reads * total, longest, name)
    short = tf.data.Dataset.from_tensor_slices(SHORT).batch(2)
    assert not caught(lambda: classifier.predict(short, verbose=0))
    # Per-word tasks and questions count in tf.data too.
    tagger = kbert.BertTokenClassifier(backbone(), 3, preprocessor=preprocessor())
    labels = tf.ragged.constant([[0] * len(t.split()) for t in TEXTS]).to_tensor(-100)
    (tagged,) = caught(
        lambda: tagger.evaluate(
            tf.data.Dataset.from_tensor_slices((TEXTS, labels)).batch(2), verbose=0
        )
    )
    (eager,) = caught(lambda: tagger.predict(TEXTS, verbose=0))
    assert counts(tagged) == counts(eager)
    # A serving graph traced outside a call counts nothing and keeps no op.
    graph = tf.function(classifier.preprocessor.preprocess).get_concrete_function(
        tf.TensorSpec([None], tf.string)
    )
    assert "count_cut" not in {op.type for op in graph.graph.get_operations()}
    assert not any("count_cut" in op.name for op in graph.graph.get_operations())


@pytest.mark.parametrize("stride", [0, 3])
def test_classifier_windows_match_tokenizers_windows(tmp_path, stride):
    classifier = kbert.BertClassifier(backbone(), 3, preprocessor=preprocessor())
    assert not caught(
        lambda: classifier.predict(TEXTS, long_texts="windows", stride=stride, verbose=0)
    )
    logits = classifier.predict(TEXTS, long_texts="windows", stride=stride, verbose=0)
    assert logits.shape == (len(TEXTS), 3)
    for row, text in enumerate(TEXTS):
        ids, _ = hf_windows(tmp_path, text, stride)
        want = np.mean(run_windows(classifier, ids), axis=0)
        np.testing.assert_allclose(logits[row], want, atol=1e-5)
    assert len(hf_windows(tmp_path, LONG, stride)[0]) > 2
    truncated = classifier.predict(SHORT, verbose=0)
    windowed = classifier.predict(SHORT, long_texts="windows", stride=stride, verbose=0)
    np.testing.assert_allclose(windowed, truncated, atol=1e-6)


@pytest.mark.parametrize("normalize", [True, False])
def test_embedder_windows_weigh_windows_by_tokens(tmp_path, normalize):
    embedder = kbert.BertTextEmbedder(
        backbone(), normalize=normalize, preprocessor=preprocessor()
    )
    raw = kbert.BertTextEmbedder(embedder.backbone, normalize=False)
    vectors = embedder.predict(TEXTS, long_texts="windows", stride=2, verbose=0)
    for row, text in enumerate(TEXTS):
        ids, _ = hf_windows(tmp_path, text, 2)
        pooled = np.array(run_windows(raw, ids))
        weights = np.array([len(window) for window in ids], "float64")
        want = (pooled * weights[:, None]).sum(axis=0) / weights.sum()
        if normalize:
            want = want / np.linalg.norm(want)
        np.testing.assert_allclose(vectors[row], want, atol=1e-5)
    truncated = embedder.predict(SHORT, verbose=0)
    windowed = embedder.predict(SHORT, long_texts="windows", stride=2, verbose=0)
    np.testing.assert_allclose(windowed, truncated, atol=1e-6)


def most_context_reference(per_window, starts, total):
    """Each piece from the window where min(pieces before, pieces after) in
    the window is largest (the first such window); [CLS] from the first
    window, [SEP] from the last."""
    joined = [None] * (total + 2)
    best = [-1] * (total + 2)
    for values, first in zip(per_window, starts):
        pieces = len(values) - 2
        for piece in range(pieces):
            score = min(piece, pieces - 1 - piece)
            if score > best[first + 1 + piece]:
                best[first + 1 + piece] = score
                joined[first + 1 + piece] = values[1 + piece]
    joined[0], joined[-1] = per_window[0][0], per_window[-1][-1]
    return np.array(joined)


@pytest.mark.parametrize("task", ["token_classifier", "feature_extractor", "stack"])
def test_per_token_windows_take_the_most_context(tmp_path, task):
    if task == "token_classifier":
        model = kbert.BertTokenClassifier(backbone(), 3, preprocessor=preprocessor())
    else:
        combine = "stack" if task == "stack" else "concat"
        model = kbert.BertFeatureExtractor(
            backbone(), layers=(-2, -1), combine=combine, preprocessor=preprocessor()
        )
    # the sequence axis first: (texts, tokens, ...), and (tokens, ...) per window
    axis = model.output_sequence_axis
    outputs = model.predict(TEXTS, long_texts="windows", stride=3, verbose=0)
    if task == "stack":
        assert outputs.shape[:2] == (len(TEXTS), 2) and outputs.shape[3] == 16
    outputs = np.moveaxis(outputs, axis, 1)
    totals = []
    for row, text in enumerate(TEXTS):
        ids, starts = hf_windows(tmp_path, text, 3)
        total = starts[-1] + len(ids[-1]) - 2
        totals.append(total)
        want = most_context_reference(
            [np.moveaxis(value, axis - 1, 0) for value in run_windows(model, ids)],
            starts,
            total,
        )
        np.testing.assert_allclose(outputs[row, : total + 2], want, atol=1e-5)
        assert not outputs[row, total + 2 :].any()
    assert outputs.shape[1] == max(totals) + 2 > LENGTH
    truncated = model.predict(SHORT, verbose=0)
    windowed = model.predict(SHORT, long_texts="windows", stride=3, verbose=0)
    np.testing.assert_allclose(windowed, truncated, atol=1e-6)


def hf_word_windows(tmp_path, words, stride):
    """Overflowing windows of `tokenizers` for pre-split words (as
    `is_split_into_words=True`): `(ids, word ids, offsets in the word)` each."""
    from tokenizers import BertWordPieceTokenizer

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    tokenizer = BertWordPieceTokenizer(str(path), lowercase=True)
    tokenizer.enable_truncation(LENGTH, stride=stride)
    encoding = tokenizer.encode(words, is_pretokenized=True)
    return [(e.ids, e.word_ids, e.offsets) for e in [encoding] + encoding.overflowing]


def reference_word_logits(model, tmp_path, text, stride):
    """Each word's first-piece logits from the window where that piece has
    the most context (min pieces before, after; the first such window),
    computed window by window."""
    best = {}  # word -> (context, logits)
    windows = hf_word_windows(tmp_path, text.split(), stride)
    all_logits = run_windows(model, [ids for ids, _, _ in windows])
    for (ids, word_ids, offsets), logits in zip(windows, all_logits):
        pieces = len(ids) - 2
        for piece in range(pieces):
            word, (start, _) = word_ids[1 + piece], offsets[1 + piece]
            if start != 0:  # not the word's first piece (offsets are in the word)
                continue
            context = min(piece, pieces - 1 - piece)
            if word not in best or context > best[word][0]:
                best[word] = (context, logits[1 + piece])
    return np.array([best[word][1] for word in range(len(text.split()))])


def reference_word_tags(model, tmp_path, text, stride, id2label):
    logits = reference_word_logits(model, tmp_path, text, stride)
    return [id2label[int(label)] for label in np.argmax(logits, -1)]


def bio_reference(text, tags):
    """Spans as seqeval reads BIO leniently: a B-X, or an I-X not after an
    X, starts one; I-X words continue it. Words are single-space separated."""
    spans, start = [], 0
    for word, tag in zip(text.split(" "), tags):
        end = start + len(word)
        prefix, _, entity = tag.partition("-")
        if prefix == "I" and spans and spans[-1]["entity"] == entity and spans[-1]["open"]:
            spans[-1]["end"] = end
        else:
            if spans:
                spans[-1]["open"] = False
            if tag != "O":
                spans.append(dict(entity=entity, start=start, end=end, open=True))
        start = end + 1
    return [
        {"entity": s["entity"], "start": s["start"], "end": s["end"],
         "text": text[s["start"] : s["end"]]}
        for s in spans
    ]  # fmt: skip


def test_predict_words_and_entities_read_windows(tmp_path):
    id2label = {0: "O", 1: "B-X", 2: "I-X"}
    tagger = randomized(  # the head too: tags of every kind
        kbert.BertTokenClassifier(
            backbone(), 3, preprocessor=preprocessor(), id2label=id2label
        ),
        seed=2,
    )
    texts = [LONG, SHORT[2]]
    assert not caught(lambda: tagger.predict_words(texts, long_texts="windows", stride=3))
    tags = tagger.predict_words(texts, long_texts="windows", stride=3)
    spans = tagger.predict_entities(texts, long_texts="windows", stride=3)
    for row, text in enumerate(texts):
        want = reference_word_tags(tagger, tmp_path, text, 3, id2label)
        assert tags[row] == want
        assert spans[row] == bio_reference(text, want)
    assert None not in tags[0] and len(tags[0]) == len(LONG.split())
    assert len(hf_word_windows(tmp_path, LONG.split(), 3)) > 2
    assert len(set(tags[0])) == 3 and spans[0]  # tags and spans to compare
    # The truncate path cuts LONG (its last words get None) and says so.
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        assert tagger.predict_words(texts)[0][-1] is None
    (warning,) = found
    assert (warning.message.truncated, warning.message.total) == (1, 2)
    assert tagger.predict_words(SHORT, long_texts="windows", stride=3) == (
        tagger.predict_words(SHORT)
    )
    with pytest.raises(ValueError, match="stride=10 must be less than the 10"):
        tagger.predict_entities(texts, long_texts="windows", stride=10)


def test_text_pairs_in_windows_cut_the_second_text(tmp_path):
    """Pairs as `tokenizers` cuts them with `truncation="only_second"` and a
    stride: the first text whole in every window, the second in windows."""
    from tokenizers import BertWordPieceTokenizer

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    tokenizer = BertWordPieceTokenizer(str(path), lowercase=True)
    tokenizer.enable_truncation(LENGTH, stride=2, strategy="only_second")
    firsts, seconds = ["the fox", "a cat", "dog"], [LONG, SHORT[0], LONG[:50]]
    classifier = kbert.BertClassifier(backbone(), 3, preprocessor=preprocessor())
    logits = classifier.predict(
        (firsts, seconds), long_texts="windows", stride=2, verbose=0
    )
    for row, pair in enumerate(zip(firsts, seconds)):
        encoding = tokenizer.encode(*pair)
        windows = [encoding] + encoding.overflowing
        outputs = run_windows(
            classifier, [w.ids for w in windows], [w.type_ids for w in windows]
        )
        want = np.mean(outputs, axis=0)
        np.testing.assert_allclose(logits[row], want, atol=1e-5)
    assert len(tokenizer.encode(firsts[0], LONG).overflowing) > 1
    # A pair that fits: exactly the truncate path's output.
    pair = (["a big dog"], ["the cat sat"])
    np.testing.assert_allclose(
        classifier.predict(pair, long_texts="windows", stride=2, verbose=0),
        classifier.predict(pair, verbose=0),
        atol=1e-6,
    )
    # Refused by name: a first text that leaves no room, counts that differ,
    # and per-token outputs (every window repeats the first text).
    pieces = len(tokenizer.encode(LONG[:40], add_special_tokens=False).ids)
    with pytest.raises(ValueError, match=f"pair 1's first text has {pieces} word pieces"):
        classifier.predict(
            (["a", LONG[:40]], ["b", LONG]), long_texts="windows", stride=2, verbose=0
        )
    with pytest.raises(ValueError, match="as many strings: 2 and 1"):
        classifier.predict((["a", "b"], [LONG]), long_texts="windows", verbose=0)
    extractor = kbert.BertFeatureExtractor(
        classifier.backbone, layers=(-1,), preprocessor=preprocessor()
    )
    with pytest.raises(ValueError, match="reads single texts, not text pairs"):
        extractor.predict((firsts, seconds), long_texts="windows", stride=2, verbose=0)


def test_fit_trains_on_windows_and_evaluate_scores_texts():
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    y = np.array([0, 1, 0, 1, 0])
    history = classifier.fit(
        TEXTS, y, long_texts="windows", stride=2, epochs=1, batch_size=4, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()
    held_out = classifier.fit(
        TEXTS, y, long_texts="windows", stride=2, validation_split=0.4, verbose=0
    )
    assert np.isfinite(held_out.history["val_loss"]).all()
    scores = classifier.evaluate(
        TEXTS, y, long_texts="windows", stride=2, return_dict=True, verbose=0
    )
    logits = classifier.predict(TEXTS, long_texts="windows", stride=2, verbose=0)
    want_loss = keras.ops.convert_to_numpy(
        keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    )
    np.testing.assert_allclose(scores["loss"], want_loss, rtol=1e-5)
    accuracy = np.mean(np.argmax(logits, -1) == y)
    np.testing.assert_allclose(scores["sparse_categorical_accuracy"], accuracy)

    # Every window trains with its text's label: at learning rate 0 and
    # without dropout, the epoch's loss is the mean over all windows.
    frozen = kbert.BertClassifier(
        randomized(
            tiny_backbone(
                vocabulary_size=len(VOCABULARY), dropout=0.0, attention_dropout=0.0
            ),
            seed=3,
        ),
        2,
        preprocessor=preprocessor(),
        dropout=0.0,
    )
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    frozen.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss)
    history = frozen.fit(
        TEXTS, y, long_texts="windows", stride=2, epochs=1, batch_size=4, verbose=0
    )
    windows = frozen.window_samples(TEXTS, 2)
    assert len(windows["example_index"]) > len(TEXTS)
    window_logits = frozen.predict({k: windows[k] for k in INPUT_NAMES}, verbose=0)
    want = keras.ops.convert_to_numpy(loss(y[windows["example_index"]], window_logits))
    np.testing.assert_allclose(history.history["loss"][0], want, rtol=1e-5)


def test_token_classifier_evaluate_scores_every_word_of_whole_texts(tmp_path, monkeypatch):
    """Loss and accuracy over every word of each text, each from its
    first piece in its best window (the reference: `tokenizers` windows);
    the texts are cut into windows once."""
    tagger = randomized(
        kbert.BertTokenClassifier(backbone(), 3, preprocessor=preprocessor())
    )
    texts = [LONG, SHORT[2], LONG[:40]]
    rng = np.random.default_rng(0)
    labels = [rng.integers(0, 3, len(text.split())).tolist() for text in texts]
    cut = []
    window_samples = tagger.window_samples
    monkeypatch.setattr(
        tagger, "window_samples", lambda *a, **k: cut.append(1) or window_samples(*a, **k)
    )
    scores = tagger.evaluate(
        texts, labels, long_texts="windows", stride=3, return_dict=True, verbose=0
    )
    assert len(cut) == 1
    logits = np.concatenate([reference_word_logits(tagger, tmp_path, t, 3) for t in texts])
    words = np.concatenate(labels)
    assert len(words) == sum(len(text.split()) for text in texts) > 3 * (LENGTH - 2)
    want_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(words, logits)
    np.testing.assert_allclose(
        scores["loss"], keras.ops.convert_to_numpy(want_loss), rtol=1e-5
    )
    np.testing.assert_allclose(scores["accuracy"], np.mean(logits.argmax(-1) == words))
    # Texts that fit: the truncate path's scores.
    short_labels = [[0, 1, 2], [1, 1, 0, 2], [2, 0, 1, 1, 0]]
    fitting = tagger.evaluate(
        SHORT, short_labels, long_texts="windows", stride=3, return_dict=True, verbose=0
    )
    truncated = tagger.evaluate(SHORT, short_labels, return_dict=True, verbose=0)
    for name in ("loss", "accuracy"):
        np.testing.assert_allclose(fitting[name], truncated[name], rtol=1e-6)
    with pytest.raises(ValueError, match="needs labels"):
        tagger.evaluate(texts, long_texts="windows", stride=3)


@pytest.mark.parametrize(
    "arguments, match",
    [
        (dict(long_texts="slide"), "long_texts='slide'"),
        (dict(long_texts="windows", stride=-1), "stride=-1"),
        (dict(long_texts="windows", stride=10), "stride=10 must be less than the 10"),
        (dict(stride=2), 'stride=2 applies to long_texts="windows"'),
    ],
)
def test_bad_long_text_arguments_are_named(arguments, match):
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    with pytest.raises(ValueError, match=match):
        classifier.predict(TEXTS, verbose=0, **arguments)


def test_windows_features_are_the_model_inputs():
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    windows = classifier.window_samples(TEXTS, 3)
    assert windows["count"] == len(TEXTS)
    assert set(INPUT_NAMES) <= set(windows)
    assert windows["token_ids"].shape[1] == LENGTH


def test_pipelines_read_long_texts_in_windows():
    classifier = kbert.BertClassifier(backbone(), 2, preprocessor=preprocessor())
    classify = kbert.pipeline(
        "text-classification", classifier, long_texts="windows", stride=3
    )
    logits = classifier.predict(TEXTS, long_texts="windows", stride=3, verbose=0)
    assert not caught(lambda: classify(TEXTS))
    scores = [row["score"] for row in classify(TEXTS)]
    np.testing.assert_allclose(scores, classify.scores(logits).max(axis=-1), atol=1e-6)
    embedder = kbert.BertTextEmbedder(backbone(), preprocessor=preprocessor())
    embed = kbert.pipeline("sentence-embeddings", embedder, long_texts="windows", stride=3)
    np.testing.assert_allclose(
        embed(TEXTS),
        embedder.predict(TEXTS, long_texts="windows", stride=3, verbose=0),
        atol=1e-6,
    )
    extract = kbert.pipeline(
        "feature-extraction",
        kbert.BertFeatureExtractor(backbone(), layers=(-1,), preprocessor=preprocessor()),
        long_texts="windows",
        stride=3,
    )
    tokens = len(classifier.preprocessor.tokenizer.tokenize(LONG))
    assert extract(LONG).shape == (tokens + 2, 16)
    # combine="stack": (layers, tokens, hidden) per text, cut on its token axis
    stack = kbert.BertFeatureExtractor(
        backbone(), layers=(-2, -1), combine="stack", preprocessor=preprocessor()
    )
    stacked = stack.predict(TEXTS, long_texts="windows", stride=3, verbose=0)
    rows = kbert.pipeline("feature-extraction", stack, long_texts="windows", stride=3)(
        TEXTS
    )
    for row, text in enumerate(TEXTS):
        length = len(classifier.preprocessor.tokenizer.tokenize(text)) + 2
        assert rows[row].shape == (2, length, 16)
        np.testing.assert_allclose(rows[row], stacked[row, :, :length], atol=1e-6)
    tagger = kbert.BertTokenClassifier(
        backbone(),
        3,
        preprocessor=preprocessor(),
        id2label={0: "O", 1: "B-X", 2: "I-X"},
    )
    tag = TokenClassificationPipeline(
        tagger, ignore_labels=(), long_texts="windows", stride=3
    )
    entities = tag(LONG)
    assert entities[-1]["end"] == len(LONG)  # the last piece is read
    words = "".join(e["word"] for e in entities).replace(" ", "").replace("##", "")
    assert words == LONG.replace(" ", "")  # every piece, once
    with pytest.raises(ValueError, match="fill-mask pipeline takes no"):
        kbert.pipeline("fill-mask", kbert.BertMaskedLM(backbone()), long_texts="windows")
    # Refused by name before any work, not deep inside a backend.
    masked_lm = kbert.BertMaskedLM(backbone(), preprocessor=preprocessor())
    with pytest.raises(
        ValueError,
        match='BertMaskedLM does not take long_texts="windows": a longer `sequence_length`',
    ):
        masked_lm.predict([LONG], long_texts="windows", verbose=0)
    answerer = kbert.BertQuestionAnswerer(backbone(), preprocessor=preprocessor())
    with pytest.raises(
        ValueError, match=r"BertQuestionAnswerer does not take.*`doc_stride`"
    ):
        answerer.predict([("who?", LONG)], long_texts="windows", verbose=0)
    extractor = kbert.BertFeatureExtractor(
        backbone(), layers=(-1,), preprocessor=preprocessor()
    )
    with pytest.raises(ValueError, match=r"BertFeatureExtractor.evaluate\(long_texts"):
        extractor.evaluate([LONG], [0], long_texts="windows")
