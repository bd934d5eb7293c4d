"""Attention heat maps: which tokens a layer's heads attend to, for one text.

`attention_maps` runs `BertBackbone(output_attentions=True)` (probabilities
equal to transformers' `output_attentions=True`, see the backbone) on a text;
`plot_attention` draws one layer/head (or the mean of a layer's heads) with
the word pieces as labels; `save_attention_map` does both (`kbert attention`).
"""

import os

import keras
import numpy as np

from kbert.models.backbone import BertBackbone
from kbert.presets.formats import load_preprocessor
from kbert.sources import resolve_source
from kbert.utils.artifact_kinds import check_target

DPI = 100


def attention_maps(source, text, sequence_length=None):
    """`(tokens, attentions)` of `text` under the checkpoint `source`.

    `tokens` are the word pieces with `[CLS]`/`[SEP]`, padding left out;
    `attentions` a `(layers, heads, tokens, tokens)` float32 array of
    attention probabilities (row: the attending token).

    Example:
    >>> tokens, attentions = attention_maps(classifier_preset, "A fine film.")
    >>> tokens[0], attentions.shape[0], bool(np.allclose(attentions.sum(-1), 1, atol=1e-5))
    ('[CLS]', 2, True)
    """
    directory = resolve_source(source)
    overrides = {"sequence_length": sequence_length} if sequence_length else {}
    preprocessor = load_preprocessor(directory, **overrides)
    if preprocessor is None:
        raise ValueError(f"{source}: no vocabulary (vocab.txt) to tokenize the text with.")
    backbone = BertBackbone.from_preset(directory, output_attentions=True)
    features = {
        k: keras.ops.convert_to_numpy(v) for k, v in preprocessor.preprocess([text]).items()
    }
    length = int(features["padding_mask"][0].sum())
    features = {k: v[:, :length] for k, v in features.items()}
    outputs = backbone(features)
    attentions = np.stack(
        [keras.ops.convert_to_numpy(layer)[0] for layer in outputs["attentions"]]
    ).astype("float32")
    vocabulary = preprocessor.tokenizer.get_vocabulary()
    tokens = [vocabulary[i] for i in features["token_ids"][0]]
    return tokens, attentions


def _pick(attentions, layer, head):
    """The `(tokens, tokens)` map of one layer and head (None: mean of heads)."""
    layers, heads = attentions.shape[:2]
    if not -layers <= layer < layers:
        raise ValueError(
            f"layer {layer} is out of range: the model has {layers} layers "
            f"(0 to {layers - 1}, or -1 for the last)."
        )
    if head is not None and not -heads <= head < heads:
        raise ValueError(
            f"head {head} is out of range: each layer has {heads} heads "
            f"(0 to {heads - 1}; leave it out for their mean)."
        )
    per_head = attentions[layer]
    return per_head.mean(0) if head is None else per_head[head]


def figure_inches(num_tokens):
    """`(width, height)` in inches of the heat map of `num_tokens` tokens.

    Example:
    >>> figure_inches(4)
    (5.0, 4.5)
    """
    side = max(4.0, 0.3 * num_tokens + 2.0)
    return side + 1.0, side + 0.5


def plot_attention(tokens, attention, path, title="Attention"):
    """Writes a `(tokens, tokens)` attention map as a labelled heat map PNG.

    Rows are the attending tokens, columns the attended ones. The PNG is
    `figure_inches(len(tokens))` at `DPI` dots per inch. Returns `path`.

    Example:
    >>> plot_attention(["[CLS]", "hi", "[SEP]"], np.full((3, 3), 1 / 3), "out/map.png")
    'out/map.png'
    """
    import matplotlib  # lazy: matplotlib is optional, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is optional, only for the plot

    attention = np.asarray(attention)
    if attention.shape != (len(tokens), len(tokens)):
        raise ValueError(
            f"attention has shape {attention.shape}; {len(tokens)} tokens need "
            f"({len(tokens)}, {len(tokens)})."
        )
    figure = plt.figure(figsize=figure_inches(len(tokens)), dpi=DPI)
    axis = figure.add_subplot()
    image = axis.imshow(
        attention, cmap="viridis", vmin=0.0, vmax=max(1e-6, attention.max())
    )
    figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04, label="probability")
    ticks = range(len(tokens))
    axis.set_xticks(ticks, tokens, rotation=90, fontsize=8)
    axis.set_yticks(ticks, tokens, fontsize=8)
    axis.set_xlabel("attended token")
    axis.set_ylabel("attending token")
    axis.set_title(title)
    # A fixed canvas (no tight bounding box), so the PNG size is known.
    figure.subplots_adjust(left=0.2, bottom=0.2, right=0.95, top=0.92)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def save_attention_map(
    source, text, path, layer=-1, head=None, sequence_length=None, overwrite=False
):
    """Draws one layer/head attention map of `text` under `source` to `path`.

    `layer`: index into the layers (default the last); `head`: index into
    its heads, or None for their mean. An existing `path` that is not a
    PNG kbert drew is refused before any work unless `overwrite=True`.
    Returns `(path, description)`.

    Example:
    >>> save_attention_map(classifier_preset, "A fine film.", "out/attention.png", head=1)
    ('out/attention.png', 'layer 2 of 2, head 2 of 2, 6 tokens')
    """
    check_target(path, "attention_map", overwrite)
    tokens, attentions = attention_maps(source, text, sequence_length)
    layers, heads = attentions.shape[:2]
    attention = _pick(attentions, layer, head)
    which_head = (
        f"mean of {heads} heads" if head is None else f"head {head % heads + 1} of {heads}"
    )
    description = (
        f"layer {layer % layers + 1} of {layers}, {which_head}, {len(tokens)} tokens"
    )
    plot_attention(tokens, attention, path, title=f"Attention: {description}")
    return path, description
