"""Sentiment classification: fine-tune all-MiniLM-L6-v2 on Rotten Tomatoes.

The same job as `make demo`, with the training-set size as a flag.

    python examples/sentiment_classification.py --train-examples 4000
    python examples/sentiment_classification.py --smoke      # seconds, for tests
    python examples/sentiment_classification.py --preset out/converted  # another checkpoint
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse
import dataclasses

from kbert.finetuning import sentiment_demo
from kbert.utils.artifact_kinds import add_overwrite_argument

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument(
        "--preset",
        default=sentiment_demo.DEMO_RECIPE.preset,
        help="the checkpoint to fine-tune: a preset name or directory (`kbert convert`)",
    )
    parser.add_argument("--out", default="out/sentiment")
    parser.add_argument("--smoke", action="store_true", help="a tiny run for tests")
    add_overwrite_argument(parser)
    args = parser.parse_args()
    sentiment_demo.run(
        args.out,
        recipe=dataclasses.replace(sentiment_demo.DEMO_RECIPE, preset=args.preset),
        train_examples=32 if args.smoke else args.train_examples,
        test_examples=64 if args.smoke else None,
        overwrite=args.overwrite,
    )
