"""Long documents: `long_texts="truncate"` vs `"windows"`, accuracy and time.

Real long texts with labels from pinned packages: the longest articles of
gensim's Wikipedia sample (`kbert.data.wikipedia`, `gensim==4.4.0`), each cut
into consecutive sections of `--words` words labelled with their article.
all-MiniLM-L6-v2 (`kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2")`)
embeds every section at `--sequence-length`, cut to its first window
(truncate) or read whole in windows sharing `--stride` pieces; a section's
article is the nearest (cosine) mean embedding of the training sections
(even-numbered sections train, odd-numbered ones test). Reports test
accuracy, seconds to embed all sections (one warm-up call first, so that
compilation is not timed) and the windows per section.

    KERAS_BACKEND=jax python benchmarks/long_texts.py [--articles 40] [--words 300]
"""

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def sections(articles, words, per_article):
    """`(texts, labels, is_train)` from the longest articles."""
    from kbert.data.wikipedia import wikipedia_articles

    pages = [(t, x) for t, x in wikipedia_articles() if not x.startswith("REDIRECT")]
    pages = sorted(pages, key=lambda page: -len(page[1].split()))[:articles]
    texts, labels, train = [], [], []
    for label, (_, text) in enumerate(pages):
        tokens = text.split()
        for number in range(min(per_article, len(tokens) // words)):
            texts.append(" ".join(tokens[number * words : (number + 1) * words]))
            labels.append(label)
            train.append(number % 2 == 0)
    return texts, np.array(labels), np.array(train)


def nearest_centroid_accuracy(vectors, labels, train):
    classes = np.unique(labels)
    centroids = np.stack([vectors[train & (labels == c)].mean(axis=0) for c in classes])
    centroids /= np.linalg.norm(centroids, axis=-1, keepdims=True)
    predicted = classes[np.argmax(vectors[~train] @ centroids.T, axis=-1)]
    return float(np.mean(predicted == labels[~train]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=40)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--per-article", type=int, default=6)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--stride", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    import keras

    import kbert

    texts, labels, train = sections(args.articles, args.words, args.per_article)
    embedder = kbert.BertTextEmbedder.from_preset(
        "all_minilm_l6_v2", sequence_length=args.sequence_length
    )
    import tensorflow as tf

    tokenizer = embedder.preprocessor.tokenizer
    lengths = tokenizer.tokenize_tensor(tf.constant(texts)).row_lengths().numpy()
    print(
        f"{len(texts)} sections of {args.words} words from {args.articles} articles "
        f"({train.sum()} train, {(~train).sum()} test); word pieces per section: "
        f"median {int(np.median(lengths))}, max {lengths.max()}; "
        f"sequence_length={args.sequence_length}, backend {keras.backend.backend()}"
    )
    print("| long_texts | windows per section | test accuracy | seconds to embed |")
    print("|---|---|---|---|")
    for mode, stride in (("truncate", None), ("windows", args.stride)):
        options = dict(batch_size=args.batch_size, verbose=0, long_texts=mode)
        options["stride"] = stride
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kbert.TruncationWarning)
            embedder.predict(texts, **options)  # compiles every shape
            start = time.perf_counter()
            vectors = embedder.predict(texts, **options)
            seconds = time.perf_counter() - start
        windows = 1.0
        if stride is not None:
            windows = len(embedder.window_samples(texts, stride)["example_index"])
            windows /= len(texts)
        accuracy = nearest_centroid_accuracy(np.asarray(vectors), labels, train)
        name = mode if stride is None else f"windows, stride {stride}"
        print(f"| {name} | {windows:.2f} | {accuracy:.3f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
