"""Top-k predictions for the `[MASK]` tokens of a sentence."""

import keras
import numpy as np


def fill_mask(model, tokenizer, text, top_k=5):
    """Predicts each `[MASK]` in `text` with a pretrainer or masked LM.

    Returns one list per `[MASK]`, of `(token, probability)` pairs, best first.

    Example:
    >>> model = kbert.BertPretrainer(backbone, preprocessor=preprocessor)
    >>> predictions = fill_mask(model, tokenizer, "Paris is the [MASK] of France.", top_k=3)
    >>> len(predictions), len(predictions[0]), predictions[0][0][0] in vocabulary
    (1, 3, True)
    """
    vocabulary = tokenizer.get_vocabulary()
    mask_id = vocabulary.index("[MASK]")
    ids = _ids(tokenizer, text)
    max_length = model.backbone.max_sequence_length
    token_ids = [
        vocabulary.index("[CLS]"),
        *ids[: max_length - 2],
        vocabulary.index("[SEP]"),
    ]
    positions = [i for i, token_id in enumerate(token_ids) if token_id == mask_id]
    if not positions:
        raise ValueError(
            f"No [MASK] token in {text!r}; write [MASK] where a word is missing."
        )
    inputs = {
        "token_ids": np.array([token_ids], "int32"),
        "segment_ids": np.zeros((1, len(token_ids)), "int32"),
        "padding_mask": np.ones((1, len(token_ids)), "int32"),
        "mask_positions": np.array([positions], "int32"),
    }
    outputs = model(inputs, training=False)
    logits = outputs["mlm_logits"] if isinstance(outputs, dict) else outputs
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))[0]
    results = []
    for row in probabilities:
        best = np.argsort(-row)[:top_k]
        results.append([(vocabulary[i], float(row[i])) for i in best])
    return results


def _ids(tokenizer, text):
    out = tokenizer([text])
    if hasattr(out, "to_list"):
        return [int(i) for i in out.to_list()[0]]
    return [int(i) for i in np.asarray(out[0]).reshape(-1)]
