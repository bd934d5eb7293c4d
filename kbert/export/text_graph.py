"""Strings to model inputs inside an exported TensorFlow graph.

The string signatures of the SavedModel and the string-in TFLite flavour call
`text_features` on their `tf.string` inputs: the model's `BertPreprocessor`
runs in the graph, so clients send raw text.
"""


def text_features(preprocessor, spec, texts):
    """Token inputs (and extra outputs) for a dict of `tf.string` tensors.

    Args:
        preprocessor: a `BertPreprocessor`.
        spec: the model's `ExportSpec`; `texts` holds `spec.text_inputs`.
        texts: 1-D string tensors (`choices` is 2-D: batch x num_choices).

    Returns:
        `(features, extras)`: the token inputs of the model, and outputs the
        string signature adds for the client (`token_ids` for token-level
        tasks, `mask_positions` for masked LM).

    Example:
    >>> texts = {"text": tf.constant(["A fine film."])}
    >>> features, extras = text_features(preprocessor, spec, texts)
    >>> sorted(features), features["token_ids"].shape, extras
    (['padding_mask', 'segment_ids', 'token_ids'], TensorShape([1, 16]), {})
    """
    import tensorflow as tf  # lazy: TF only in exported string graphs

    extras = {}
    if spec.extra_dims:  # multiple choice: each prompt paired with its choices
        prompt, choices = (texts[name] for name in spec.text_inputs)
        num_choices = spec.extra_dims[0]
        flat = preprocessor.preprocess(
            (tf.repeat(prompt, num_choices), tf.reshape(choices, [-1]))
        )
        features = {
            name: tf.reshape(value, [-1, num_choices, preprocessor.sequence_length])
            for name, value in _checked(flat).items()
        }
        return features, extras
    segments = tuple(texts[name] for name in spec.text_inputs)
    packed = preprocessor.preprocess(segments if len(segments) == 2 else segments[0])
    features = _checked(packed)
    if spec.per_token_outputs:
        extras["token_ids"] = features["token_ids"]
    if "mask_positions" in spec.token_inputs:
        positions = mask_positions(
            features["token_ids"], preprocessor.tokenizer.mask_token_id
        )
        features["mask_positions"] = tf.maximum(positions, 0)
        extras["mask_positions"] = positions
    return features, extras


def _checked(packed):
    import tensorflow as tf  # lazy: TF only in exported string graphs

    features = {name: packed[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    # The same values (the packer gives padding segment 0), but the product
    # stops TFLite's converter from folding `segment_ids < 0` (inside the
    # segment embedding) into a boolean ZerosLike that TFLite cannot run.
    features["segment_ids"] = features["segment_ids"] * features["padding_mask"]
    return {name: tf.cast(value, tf.int32) for name, value in features.items()}


def mask_positions(token_ids, mask_token_id):
    """(batch, P) positions of `[MASK]` tokens, P the most in a row; -1 pads.

    Example:
    >>> token_ids = tf.constant([[2, 4, 9, 4, 3], [2, 9, 4, 3, 0]])
    >>> mask_positions(token_ids, mask_token_id=4).numpy()
    array([[ 1,  3],
           [ 2, -1]], dtype=int32)
    """
    import tensorflow as tf  # lazy: TF only in exported string graphs

    if mask_token_id is None:
        raise ValueError("A masked LM string signature needs [MASK] in the vocabulary.")
    is_mask = tf.cast(tf.equal(token_ids, mask_token_id), tf.int32)
    count = tf.reduce_sum(is_mask, axis=1)
    width = tf.maximum(tf.reduce_max(count), 1)
    order = tf.argsort(-is_mask, axis=1, stable=True)[:, :width]
    valid = tf.range(width)[None, :] < count[:, None]
    return tf.where(valid, tf.cast(order, tf.int32), -1)
