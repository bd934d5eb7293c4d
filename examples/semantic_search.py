"""Semantic search: top-k Rotten Tomatoes reviews by cosine similarity.

Embeds the corpus with all-MiniLM-L6-v2 (mean pooling, L2-normalized, as
sentence-transformers does), then answers each query with its k nearest
reviews.

    python examples/semantic_search.py --corpus-size 2000 "a heartwarming family film"
    python examples/semantic_search.py --smoke
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse

import numpy as np

import kbert
from kbert.data import rotten_tomatoes


def search(embedder, corpus, queries, k=3, batch_size=64):
    """The k most similar corpus texts for each query, with their cosine."""
    corpus_vectors = np.asarray(embedder.predict(corpus, batch_size=batch_size, verbose=0))
    query_vectors = np.asarray(embedder.predict(queries, verbose=0))
    scores = query_vectors @ corpus_vectors.T  # unit vectors: dot = cosine
    top = np.argsort(-scores, axis=1)[:, :k]
    return [[(corpus[j], float(scores[i, j])) for j in row] for i, row in enumerate(top)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument(
        "queries",
        nargs="*",
        default=["a heartwarming family film", "boring and far too long"],
    )
    parser.add_argument("--corpus-size", type=int, default=2000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    args = parser.parse_args()
    texts, _ = rotten_tomatoes(categories=("fresh", "rotten"))
    corpus = texts[: 40 if args.smoke else args.corpus_size]
    embedder = kbert.BertTextEmbedder.from_preset("all_minilm_l6_v2", sequence_length=64)
    for query, hits in zip(args.queries, search(embedder, corpus, args.queries, args.k)):
        print(f"\n{query!r}")
        for text, score in hits:
            print(f"  {score:.3f}  {text[:100]}")
