"""Train as you serve: what `normalization="mediapipe"` does to a fine-tune.

MediaPipe's tokenizer lowercases but keeps accents; uncased BERT strips
them. For each normalization (`"exact"`, the checkpoint's; `"mediapipe"`)
this fine-tunes all-MiniLM-L6-v2 on Rotten Tomatoes (the demo recipe, cut to
`--train` reviews) and reports:

- tokenizer divergence from MediaPipe on `DIVERGENCE_TEXTS` (the export
  check) and on the test reviews;
- test accuracy on `--test` held-out reviews (all 1,281 by default),
  tokenized by the model (Keras) and as the MediaPipe app tokenizes them.

    python benchmarks/train_as_you_serve.py --train 2000
"""

import argparse
import json
import time

import numpy as np


def measure(normalization, train_examples, test_examples, seed):
    import keras

    from kbert.data import rotten_tomatoes_split
    from kbert.export.checks import tokenizer_divergence
    from kbert.export.spec import export_spec, keras_outputs
    from kbert.export.tflite.inputs import mediapipe_preprocessor
    from kbert.export.verification_data import texts_to_features
    from kbert.finetuning.classifier_training import build_classifier, train_classifier
    from kbert.finetuning.sentiment_demo import DEMO_RECIPE

    recipe = DEMO_RECIPE.__class__(
        **{**vars(DEMO_RECIPE), "seed": seed, "normalization": normalization}
    )
    splits = rotten_tomatoes_split(seed=seed)
    train = tuple(part[:train_examples] for part in splits["train"])
    test_texts, test_labels = (part[:test_examples] for part in splits["test"])
    model = build_classifier(recipe, 2, len(train[0]), id2label={0: "rotten", 1: "fresh"})
    _, _, seconds = train_classifier(model, recipe, train, verbose=0)
    spec = export_spec(model)
    served = mediapipe_preprocessor(model.preprocessor)
    own = model.preprocessor.tokenizer
    row = {
        "normalization": normalization,
        "backend": keras.backend.backend(),
        "train_examples": len(train[0]),
        "train_seconds": round(seconds, 1),
        "divergence_texts": tokenizer_divergence(own, served.tokenizer, "MediaPipe"),
        "test_reviews": tokenizer_divergence(
            own, served.tokenizer, "MediaPipe", texts=list(test_texts)
        ),
    }
    for name, preprocessor in (("keras", model.preprocessor), ("as_mediapipe", served)):
        features, _ = texts_to_features(preprocessor, spec, {"text": list(test_texts)})
        logits = keras_outputs(model, features)["logits"]
        row[f"test_accuracy_{name}"] = float(
            np.mean(np.argmax(logits, -1) == np.asarray(test_labels))
        )
    for key in ("divergence_texts", "test_reviews"):
        row[key].pop("example", None)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=2000, help="training reviews")
    parser.add_argument("--test", type=int, default=1281, help="test reviews")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for normalization in ("exact", "mediapipe"):
        start = time.perf_counter()
        row = measure(normalization, args.train, args.test, args.seed)
        row["seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
