"""Tokenizer divergence: where a deployment tokenizer reads text differently
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
