"""The inputs an exporter verifies its artifact on.

Real sentences (`sentences`) turned into the model's inputs by its own
preprocessor. A model without a preprocessor has no way from text to ids: it
is checked on seeded random token ids, and the report says so.
"""

import dataclasses

import numpy as np

from kbert.export import sentences
from kbert.export.spec import TOKEN_INPUTS


@dataclasses.dataclass
class VerificationData:
    """Texts (None without a preprocessor) and token inputs for the same rows.

    `token_batches` holds two batches of different shapes, so that a
    dynamic-shape artifact is run at more than one shape: all rows at the
    preprocessor's sequence length, and the first rows cut to their longest
    real length.
    """

    texts: dict | None
    token_batches: list
    source: str


def texts_to_features(preprocessor, spec, texts):
    """Token inputs (+ the string signature's extra outputs) as NumPy arrays.

    Example:
    >>> features, extras = texts_to_features(model.preprocessor, spec, {"text": texts})
    """
    import tensorflow as tf

    from kbert.export.text_graph import text_features

    tensors = {name: tf.constant(value) for name, value in texts.items()}
    features, extras = text_features(preprocessor, spec, tensors)
    features = {name: value.numpy() for name, value in features.items()}
    extras = {name: value.numpy() for name, value in extras.items()}
    return features, extras


def _shorter(features, rows):
    """The first `rows` rows, cut to their longest real length (at most 2/3).

    Cutting real tokens off still gives valid inputs: what matters is that
    the artifact runs at a second (batch, sequence) shape.
    """
    full = features["token_ids"].shape[-1]
    longest = int(np.max(np.sum(features["padding_mask"][:rows], axis=-1)))
    length = max(2, min(longest, (2 * full) // 3))
    short = {}
    for name, value in features.items():
        short[name] = (
            value[:rows] if name == "mask_positions" else value[:rows, ..., :length]
        )
    if "mask_positions" in short:
        short["mask_positions"] = np.minimum(short["mask_positions"], length - 1)
    return short


def random_features(model, spec, rows, length, seed=0):
    """Seeded random token inputs with right padding (no preprocessor).

    Example:
    >>> random_features(model, spec, rows=4, length=16)["token_ids"].shape
    (4, 16)
    """
    backbone = getattr(model, "backbone", model)
    rng = np.random.default_rng(seed)
    shape = (rows,) + tuple(spec.extra_dims) + (length,)
    token_ids = rng.integers(4, backbone.vocabulary_size, shape).astype("int32")
    lengths = rng.integers(2, length + 1, shape[:-1])
    lengths.reshape(-1)[0] = length
    padding_mask = (np.arange(length) < lengths[..., None]).astype("int32")
    features = {
        "token_ids": token_ids * padding_mask,
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": padding_mask,
    }
    if "mask_positions" in spec.token_inputs:
        features["mask_positions"] = np.tile(np.array([[1, 2]], "int32"), (rows, 1))
    return features


def verification_data(model, spec, count=16, preprocessor="model"):
    """Texts and token batches for `model` (see `VerificationData`).

    Example:
    >>> data = verification_data(classifier, export_spec(classifier))
    >>> data.token_batches[0]["token_ids"].shape
    (16, 128)
    """
    preprocessor = model.preprocessor if preprocessor == "model" else preprocessor
    if preprocessor is None:
        backbone = getattr(model, "backbone", model)
        length = min(32, backbone.max_sequence_length)
        features = random_features(model, spec, count, length)
        return VerificationData(
            None,
            [features, _shorter(features, max(2, count // 2))],
            "random token ids (the model has no preprocessor)",
        )
    texts = sentences.verification_inputs(spec, count)
    features, _ = texts_to_features(preprocessor, spec, texts)
    if spec.task == "masked_lm":
        # Real sentences hold no [MASK]: predict positions 1 and 2.
        features["mask_positions"] = np.tile(np.array([[1, 2]], "int32"), (count, 1))
    features = {name: features[name] for name in spec.token_inputs}
    return VerificationData(
        texts,
        [features, _shorter(features, max(2, count // 2))],
        f"{count} real sentences ({sentences.source()})",
    )


def pad_to(features, length):
    """Right-pads (or refuses to cut) token inputs to a static sequence length.

    Example:
    >>> pad_to(features, 128)["token_ids"].shape[-1]
    128
    """
    padded = {}
    for name, value in features.items():
        if name == "mask_positions" or name not in TOKEN_INPUTS:
            padded[name] = value
            continue
        current = value.shape[-1]
        if current > length:
            real = int(np.max(np.sum(features["padding_mask"], axis=-1)))
            if real > length:
                raise ValueError(
                    f"Inputs hold {real} real tokens; the artifact takes {length}."
                )
            padded[name] = value[..., :length]
        else:
            widths = [(0, 0)] * (value.ndim - 1) + [(0, length - current)]
            padded[name] = np.pad(value, widths)
    return padded
