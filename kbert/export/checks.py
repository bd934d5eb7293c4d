"""Checks of an artifact against the Keras model it came from: its outputs
(numeric closeness) and, for artifacts that take strings, its tokenizer.

Tokenizer divergence: where a deployment tokenizer reads text differently
from the model's own.

A TFLite `"string"` file tokenizes with tf-text's `FastBertTokenizer`
(NFKC case folding: `…` -> `...`, full-width letters folded), a MediaPipe
app with MediaPipe's WordPiece tokenizer (lowercase, accents kept:
`café` stays `café` where uncased BERT reads `cafe`). The verification
sentences are plain English reviews, so exporters also tokenize
`DIVERGENCE_TEXTS` (accents, `…`, emoji, curly quotes, full-width forms,
as people type on phones) both ways, keep the agreement in the export
record and warn, naming the characters, when the two differ.
"""

import warnings

import numpy as np

# Default tolerances per export kind: max |artifact - Keras| per output, for
# outputs of magnitude <= 1 (probabilities); above, times max |Keras|, since
# float32 rounding grows with the values (e.g. oneDNN's fused GELU kernels
# in TensorFlow graphs round differently from eager ones).
SAVED_MODEL_TOLERANCE = 1e-5
FLOAT_TOLERANCE = 1e-4  # TFLite float32, MediaPipe, ONNX
# Quantized artifacts: max |artifact - Keras| relative to max |Keras|, per
# output. float16 and dynamic-range int8 stay well inside these on MiniLM;
# full int8 (int8 activations too) does not (about 1.6 x max |Keras| on
# MiniLM-L6), so such an export raises unless `tolerance=` accepts it.
QUANTIZED_RELATIVE_TOLERANCE = {"float16": 0.02, "dynamic_int8": 0.25, "int8": 0.5}


class ExportVerificationError(ValueError):
    """An artifact's outputs disagree with the Keras model's."""


def max_abs_diff(actual, expected, context=""):
    """`{output: max |actual - expected|}`; raises on missing or misshapen outputs.

    Example:
    >>> max_abs_diff({"logits": np.ones(2)}, {"logits": np.zeros(2)})
    {'logits': 1.0}
    """
    diffs = {}
    for name, want in expected.items():
        if name not in actual:
            raise ExportVerificationError(
                f"{context}: output {name!r} is missing; the artifact gives "
                f"{sorted(actual)}."
            )
        got = np.asarray(actual[name])
        want = np.asarray(want)
        if got.shape != want.shape:
            raise ExportVerificationError(
                f"{context}: output {name!r} has shape {got.shape}, the Keras "
                f"model's {want.shape}."
            )
        if not np.all(np.isfinite(got)):
            raise ExportVerificationError(f"{context}: output {name!r} is not finite.")
        if got.size == 0:
            diffs[name] = 0.0
            continue
        diffs[name] = float(np.max(np.abs(got.astype("float64") - want.astype("float64"))))
    return diffs


def check_close(actual, expected, tolerance, context, relative=False):
    """Raises `ExportVerificationError` unless every output is within tolerance.

    The bound is `tolerance * max(1, max |expected|)` per output; with
    `relative=True` (quantized artifacts) `tolerance * max |expected|`.
    Returns `max_abs_diff`'s dict.

    Example:
    >>> check_close({'p': np.array([0.5])}, {'p': np.array([0.5])}, 1e-5, 'test')
    {'p': 0.0}
    """
    diffs = max_abs_diff(actual, expected, context)
    for name, diff in diffs.items():
        bound = allowed_diff(expected[name], tolerance, relative)
        if not diff <= bound:
            kind = f"{tolerance:g} x max|Keras| = {bound:.3g}"
            raise ExportVerificationError(
                f"{context}: output {name!r} differs from the Keras model by "
                f"{diff:.3g} (allowed: {kind}). The artifact is not written."
            )
    return diffs


def allowed_diff(expected, tolerance, relative=False):
    """The largest max |artifact - Keras| `check_close` accepts for one output:
    `tolerance * max(1, max |expected|)`, or `tolerance * max |expected|` when
    `relative` (quantized artifacts).

    Example:
    >>> allowed_diff(np.array([0.2, -0.5]), 1e-4), allowed_diff(np.array([4.0]), 1e-4)
    (0.0001, 0.0004)
    >>> allowed_diff(np.array([4.0]), 0.25, relative=True)
    1.0
    """
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 0.0
    return tolerance * (max(scale, 1e-6) if relative else max(scale, 1.0))


def check_equal(actual, expected, context):
    """Integer outputs (token ids, positions) must match exactly.

    Example:
    >>> ids = np.array([[2, 7, 3]])
    >>> check_equal({"token_ids": ids}, {"token_ids": ids}, "SavedModel")
    >>> check_equal({"token_ids": ids + 1}, {"token_ids": ids}, "SavedModel")
    Traceback (most recent call last):
    ...
    kbert.export.checks.ExportVerificationError: SavedModel: output 'token_ids' differs ...
    """
    for name, want in expected.items():
        got = np.asarray(actual.get(name))
        if got.shape != np.asarray(want).shape or not np.array_equal(got, want):
            raise ExportVerificationError(
                f"{context}: output {name!r} differs from the preprocessor's."
            )


def merge_diffs(*diff_dicts):
    """Largest difference per output over several runs.

    Example:
    >>> merge_diffs({'logits': 1e-6}, {'logits': 3e-6})
    {'logits': 3e-06}
    """
    merged = {}
    for diffs in diff_dicts:
        for name, value in diffs.items():
            merged[name] = max(merged.get(name, 0.0), value)
    return merged


# === The tokenizer inside a string artifact ===


def tokenization_parity(own_ids, served_ids):
    """`{"agreeing", "texts", "share"}`: rows whose ids are all the same.

    Example:
    >>> tokenization_parity(np.array([[1, 2], [1, 3]]), np.array([[1, 2], [1, 4]]))
    {'agreeing': 1, 'texts': 2, 'share': 0.5}
    """
    same = np.all(np.asarray(own_ids) == np.asarray(served_ids), axis=-1)
    return {
        "agreeing": int(np.sum(same)),
        "texts": int(len(same)),
        "share": float(np.mean(same)),
    }


def check_tokenization_parity(parity, minimum, context, tokenizer, remedy=""):
    """`parity` with its `"minimum"`; `ExportVerificationError` below it,
    naming the artifact's `tokenizer` (and, when given, what causes it).

    Example:
    >>> check_tokenization_parity({"agreeing": 15, "texts": 16, "share": 0.9375}, 0.75,
    ...                           "", "tf-text's TFLite tokenizer")
    {'agreeing': 15, 'texts': 16, 'share': 0.9375, 'minimum': 0.75}
    """
    if parity["share"] < minimum:
        raise ExportVerificationError(
            f"{context}: {tokenizer} splits only {parity['agreeing']} of "
            f"{parity['texts']} real sentences as the model's own tokenizer does "
            f"(share {parity['share']:.2f} < MIN_TOKENIZATION_PARITY = {minimum}); "
            "the file would not serve the tokenization the model was trained on."
            + (f" {remedy}" if remedy else "")
        )
    return {**parity, "minimum": minimum}


# Accented and mobile-style sentences; the last one is plain ASCII.
DIVERGENCE_TEXTS = (
    "Café au lait with a naïve friend… totally worth it!",
    "The crème brûlée was über-good 😍😍",
    "“Amazing” soundtrack — can’t stop listening 🎶",
    "Ｆｕｌｌ-ｗｉｄｔｈ ｔｅｘｔ ｆｒｏｍ ａ ｐｈｏｎｅ： ＯＫ！",
    "Señor Müller’s résumé: 10/10 👍",
    "Déjà vu… the sequel is à la carte nonsense 🙄",
    "lol this movie 😂😂 best rom-com ever ❤️",
    "Zoë and Chloë loved the piñata scene ‘so much’",
    "Pokémon fans: 5★ – would watch again",
    "Björk’s smörgåsbord of ideas, façade and all",
    "Y Tu Mamá También is a jalapeño of a film.",
    "No accents here, just a plain review of a fine film.",
)


class TokenizerDivergenceWarning(UserWarning):
    """A deployment tokenizer gives other token ids than the model's own."""


def _tokens(tokenizer, texts):
    import tensorflow as tf  # lazy: TF only when text is tokenized

    ids = tokenizer.tokenize_tensor(tf.constant(list(texts), tf.string)).to_list()
    vocabulary = tokenizer.get_vocabulary()
    return [[vocabulary[i] for i in row] for row in ids]


def tokenizer_divergence(own, deployment, name, texts=DIVERGENCE_TEXTS):
    """Tokenizes `texts` with the model's tokenizer and the deployment's.

    `own`, `deployment`: `BertTokenizer`s; `name` says which runtime the
    deployment tokenizer is (for messages). Returns the export record's entry:
    the share of texts tokenized identically and the characters that
    tokenize differently (each one tried alone), with an example.

    Example:
    >>> from kbert.preprocessing import BertTokenizer
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", "e", "é", "caf", "##é"]
    >>> entry = tokenizer_divergence(BertTokenizer(vocabulary),
    ...     BertTokenizer(vocabulary, normalization="mediapipe"), "MediaPipe", ["Café"])
    >>> entry["agreement"], entry["characters"], entry["example"]["deployment"]
    (0.0, ['é'], ['caf', '##é'])
    """
    texts = list(texts)
    mine, theirs = _tokens(own, texts), _tokens(deployment, texts)
    differing = [i for i in range(len(texts)) if mine[i] != theirs[i]]
    characters = sorted({c for i in differing for c in texts[i] if not c.isspace()})
    if characters:
        alone_mine = _tokens(own, characters)
        alone_theirs = _tokens(deployment, characters)
        characters = [c for c, a, b in zip(characters, alone_mine, alone_theirs) if a != b]
    entry = {
        "deployment_tokenizer": name,
        "texts": len(texts),
        "same": len(texts) - len(differing),
        "agreement": (len(texts) - len(differing)) / len(texts),
        "characters": characters,
    }
    if differing:
        first = differing[0]
        entry["example"] = {
            "text": texts[first],
            "model": mine[first],
            "deployment": theirs[first],
        }
    return entry


def describe(entry):
    """One line for reports: the agreement and the differing characters.

    Example:
    >>> print(describe({"deployment_tokenizer": "MediaPipe", "texts": 12, "same": 9,
    ...                 "agreement": 0.75, "characters": ["é", "ï"]}))
    9/12 accented/mobile sentences tokenized as by the model (MediaPipe differs on 'é' 'ï')
    """
    line = (
        f"{entry['same']}/{entry['texts']} accented/mobile sentences tokenized "
        "as by the model"
    )
    if entry["same"] < entry["texts"]:
        shown = " ".join(repr(c) for c in entry["characters"][:20]) or "whole words"
        line += f" ({entry['deployment_tokenizer']} differs on {shown})"
    return line


def warn_on_divergence(entry, remedy):
    """Warns (`TokenizerDivergenceWarning`) when the tokenizers disagree.

    `remedy` says what makes them agree (e.g. a training normalization).

    Example:
    >>> warn_on_divergence({"deployment_tokenizer": "MediaPipe", "texts": 1,
    ...                     "same": 1, "agreement": 1.0, "characters": []}, "")
    """
    if entry["same"] == entry["texts"]:
        return
    example = entry.get("example")
    shown = ""
    if example:
        shown = (
            f' E.g. "{example["text"]}": the model reads {example["model"]}, '
            f"{entry['deployment_tokenizer']} {example['deployment']}."
        )
    warnings.warn(
        f"{entry['deployment_tokenizer']}'s tokenizer differs from the model's on "
        f"{entry['texts'] - entry['same']} of {entry['texts']} accented/mobile "
        f"sentences; characters tokenized differently: "
        f"{' '.join(repr(c) for c in entry['characters']) or 'none alone'}.{shown} "
        f"{remedy}",
        TokenizerDivergenceWarning,
        stacklevel=2,
    )
