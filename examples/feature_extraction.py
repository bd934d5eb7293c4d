"""Feature extraction as in the BERT paper, then a scikit-learn classifier.

The frozen all-MiniLM-L6-v2 encoder gives the concatenation of its last four
hidden layers per token (`BertFeatureExtractor`); the mask-aware mean over
tokens is the text's feature vector; a logistic regression learns sentiment
from those features on Rotten Tomatoes.

    python examples/feature_extraction.py --train-examples 2000
    python examples/feature_extraction.py --smoke
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse

import numpy as np

import kbert
from kbert.finetuning.sentiment_demo import sentiment_splits


def text_features(extractor, texts, batch_size=64):
    """Mean over real tokens of the last-four-layers concatenation."""
    inputs = extractor.preprocessor(texts)
    mask = np.asarray(inputs["padding_mask"])[..., None]
    features = np.asarray(extractor.predict(texts, batch_size=batch_size, verbose=0))
    return (features * mask).sum(1) / mask.sum(1)


def main(train_examples, test_examples):
    from sklearn.linear_model import LogisticRegression

    splits = sentiment_splits(train_examples)
    backbone = kbert.BertBackbone.from_preset("all_minilm_l6_v2")
    extractor = kbert.BertFeatureExtractor(
        backbone,
        layers=(-4, -3, -2, -1),
        combine="concat",
        preprocessor=kbert.BertTextEmbedder.from_preset(
            "all_minilm_l6_v2", sequence_length=48
        ).preprocessor,
    )
    train_texts, train_labels = splits["train"]
    test_texts, test_labels = (part[:test_examples] for part in splits["test"])
    classifier = LogisticRegression(max_iter=2000, C=1.0)
    classifier.fit(text_features(extractor, train_texts), train_labels)
    accuracy = classifier.score(text_features(extractor, test_texts), test_labels)
    print(f"Features: {4 * backbone.hidden_dim} per text (last four layers, concatenated)")
    print(f"Logistic regression test accuracy: {accuracy:.4f} ({len(test_texts)} reviews)")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument("--train-examples", type=int, default=2000)
    parser.add_argument("--test-examples", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    args = parser.parse_args()
    if args.smoke:
        main(64, 64)
    else:
        main(args.train_examples, args.test_examples)
