"""The main job (README's first command): fine-tune all-MiniLM-L6-v2 on
Rotten Tomatoes sentiment, report test accuracy, save the training curve and
the model, reload it in every saved format and print a parity table.

    KERAS_BACKEND=jax python examples/demo.py [--train-examples 4000] [--out out/demo]
"""

import sys

from kbert.utils.quiet import quiet_process

quiet_process("--verbose" in sys.argv)  # first: no TensorFlow/absl/CUDA start-up logs

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # the fastest training backend here

from kbert.finetuning import sentiment_demo
from kbert.utils.artifact_kinds import add_overwrite_argument

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorFlow/absl/CUDA logs"
    )
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument("--out", default="out/demo")
    add_overwrite_argument(parser)
    args = parser.parse_args()
    sentiment_demo.run(
        args.out, train_examples=args.train_examples, overwrite=args.overwrite
    )
