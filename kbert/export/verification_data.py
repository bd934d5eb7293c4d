"""The inputs every exporter verifies its artifact on, and where they come from.

Real English sentences: the held-out Rotten Tomatoes reviews of
`kbert.data`, or, when that corpus cannot be fetched, the short built-in list
below (real review sentences, same source), so that an export never depends
on the network. The model's own preprocessor turns them into token inputs.
A model without a preprocessor has no way from text to ids: it is checked on
seeded random token ids, and the report says so.

Token inputs are checked against the model's tables (`checked_features`)
before the artifact or Keras runs them: an id outside `vocabulary_size` /
`num_segments` (a preprocessor with a larger vocabulary, say) raises the
`ValueError` of `kbert.models.id_ranges.check_id_ranges`. An exported
artifact is a compiled graph and does not check its inputs: what it does
with an out-of-range id is its runtime's.
"""

import dataclasses
import functools

import numpy as np

from kbert.data import rotten_tomatoes_split
from kbert.export.spec import TOKEN_INPUTS, text_features
from kbert.models.id_ranges import check_id_ranges

# The first 16 held-out reviews of `rotten_tomatoes_split(seed=0)`.
BUILT_IN = (
    (
        "Given the fact that virtually no one is bound to show up at theatres "
        "for it, the project should have been made for the tube."
    ),
    (
        "The film may not hit as hard as some of the better drug-related "
        "pictures, but it still manages to get a few punches in."
    ),
    ("Lawrence should stick to his day job.  He's a better actor than a standup comedian."),
    (
        "Hailed as a clever exercise in neo-Hitchcockianism, this clever and "
        "very satisfying picture is more accurately Chabrolian."
    ),
    (
        "We can't accuse Kung Pow for misfiring, since it is exactly what it "
        "wants to be: an atrociously, mind-numbingly, indescribably bad movie. "
        "Unfortunately, we'd prefer a simple misfire."
    ),
    (
        "A smug and convoluted action-comedy that doesn't allow an earnest "
        "moment to pass without reminding audiences that it's only a movie."
    ),
    (
        "There is something that is so meditative and lyrical about Babak "
        "Payami’s boldly quirky Iranian drama Secret Ballota charming and "
        "evoking little ditty that manages to show the gentle and humane side "
        "of Middle Eastern world politics"
    ),
    (
        "A wonderful, low-key coming-of-age saga with none of that after-school "
        "special hysteria."
    ),
    (
        "Noyce does what Graham Greene adapters rarely do… he captures Greene’s "
        "sense of fate and coincidence."
    ),
    (
        "It's a drag how Nettelbeck sees working women -- or at least this "
        "working woman -- for whom she shows little understanding."
    ),
    (
        "Only those most addicted to film violence in all its forms will find "
        "anything here to appreciate."
    ),
    "It's all surface psychodramatics.",
    (
        "The story is so light and sugary that were it a Macy's Thanksgiving "
        "Day Parade balloon, extra heavy-duty ropes would be needed to keep it "
        "from floating away."
    ),
    (
        "So purely enjoyable that you might not even notice it's a fairly "
        "straightforward remake of Hollywood comedies such as Father of the "
        "Bride."
    ),
    (
        "The pleasure of Read My Lips is like seeing a series of perfect black "
        "pearls clicking together to form a string. We're drawn in by the dark "
        "luster."
    ),
    (
        "Wonderfully charming romantic drama, with an excellent performance by "
        "(of all people!) Scott Baio."
    ),
)


@functools.lru_cache(maxsize=1)
def _split():
    try:
        return rotten_tomatoes_split(seed=0)
    except Exception:  # noqa: BLE001 - no network or cache: use the built-in list
        return None


def source():
    """Where the sentences come from, in words.

    Example:
    >>> source()
    'Rotten Tomatoes test split'
    """
    if _split() is None:
        return "the built-in Rotten Tomatoes sentences"
    return "Rotten Tomatoes test split"


def verification_texts(count=16, offset=0):
    """`count` real sentences (held-out Rotten Tomatoes reviews).

    Example:
    >>> len(verification_texts(8))
    8
    """
    split = _split()
    texts = list(split["test"][0]) if split else list(BUILT_IN)
    if offset + count > len(texts):
        texts = texts * (1 + (offset + count) // len(texts))
    return texts[offset : offset + count]


def verification_inputs(spec, count=16, offset=0):
    """Real text inputs for the string signatures of `spec`, as lists of str.

    Pairs join each sentence with the next one; a question answerer gets the
    first sentence as question and the next as context; multiple choice gets a
    prompt and `num_choices` following sentences as choices.

    Example:
    >>> sorted(verification_inputs(qa_spec, 4))
    ['context', 'question']
    """
    per_example = 1 + (spec.extra_dims[0] if spec.extra_dims else 0)
    inputs = inputs_of(spec, verification_texts(count * per_example + 1, offset))
    return {name: value[:count] for name, value in inputs.items()}


def inputs_of(spec, texts):
    """Text inputs for the string signatures of `spec`, made of a list of
    sentences (one example per sentence; fewer for pairs and choices).

    Pairs join each sentence with the next one; a question answerer gets the
    sentence as question and the next as context; multiple choice gets a
    prompt and the `num_choices` sentences after it as choices.

    Example:
    >>> inputs_of(qa_spec, ["A.", "B.", "C."])
    {'question': ['A.', 'B.'], 'context': ['B.', 'C.']}
    """
    if len(spec.text_inputs) == 1:
        return {spec.text_inputs[0]: list(texts)}
    first, second = spec.text_inputs
    if spec.extra_dims:  # multiple choice: a prompt and its choices
        step = 1 + spec.extra_dims[0]
        count = len(texts) // step
        return {
            first: [texts[i * step] for i in range(count)],
            second: [list(texts[i * step + 1 : (i + 1) * step]) for i in range(count)],
        }
    return {first: list(texts[:-1]), second: list(texts[1:])}


def representative_texts(count=100):
    """Real training sentences to calibrate full-int8 quantization on.

    Example:
    >>> len(representative_texts(100))
    100
    """
    split = _split()
    if split is None:
        return list(BUILT_IN)
    return list(split["train"][0][:count])


def checked_features(model, features, what):
    """`features`, once their token and segment ids are inside `model`'s
    tables; else the `ValueError` of `check_id_ranges`, prefixed by `what`
    (where the inputs come from).

    Example:
    >>> features = {"token_ids": np.array([[2, 500, 3]])}
    >>> checked_features(classifier, features, "Verification inputs")
    Traceback (most recent call last):
    ...
    ValueError: Verification inputs: Input 'token_ids' holds id 500 at position ...
    """
    backbone = getattr(model, "backbone", model)
    try:
        check_id_ranges(dict(features), backbone.vocabulary_size, backbone.num_segments)
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    return features


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
    >>> features, extras = texts_to_features(preprocessor, spec, {"text": ["A fine film."]})
    >>> features["token_ids"]
    array([[ 2,  6, 31, 32, 12,  3,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0]], dtype=int32)
    """
    import tensorflow as tf  # lazy: TF only when text is tokenized

    tensors = {name: tf.constant(value) for name, value in texts.items()}
    features, extras = text_features(preprocessor, spec, tensors)
    features = {name: value.numpy() for name, value in features.items()}
    extras = {name: value.numpy() for name, value in extras.items()}
    return features, extras


def token_features(preprocessor, spec, texts):
    """The token inputs of `spec` for `texts`, as NumPy arrays.

    A masked LM also gets `mask_positions` 1 and 2: real sentences hold no
    [MASK].

    Example:
    >>> sorted(token_features(preprocessor, spec, {"text": ["A fine film."]}))
    ['padding_mask', 'segment_ids', 'token_ids']
    """
    features, _ = texts_to_features(preprocessor, spec, texts)
    if "mask_positions" in spec.token_inputs:
        rows = len(features["token_ids"])
        features["mask_positions"] = np.tile(np.array([[1, 2]], "int32"), (rows, 1))
    return {name: features[name] for name in spec.token_inputs}


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
    >>> random_features(classifier, spec, rows=4, length=16)["token_ids"].shape
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
    >>> data = verification_data(classifier, spec)  # 16 sentences, two shapes
    >>> [batch["token_ids"].shape for batch in data.token_batches]
    [(16, 16), (8, 10)]
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
    texts = verification_inputs(spec, count)
    features = checked_features(
        model,
        token_features(preprocessor, spec, texts),
        "The verification sentences, tokenized by the preprocessor",
    )
    return VerificationData(
        texts,
        [features, _shorter(features, max(2, count // 2))],
        f"{count} real sentences ({source()})",
    )


def pad_to(features, length):
    """Right-pads (or refuses to cut) token inputs to a static sequence length.

    Example:
    >>> pad_to(token_inputs, 128)["token_ids"].shape[-1]
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
