"""Real English sentences the exporters verify their artifacts on.

They come from the Rotten Tomatoes reviews of `kbert.data` (its held-out
test split); when that corpus cannot be fetched, from the short list below
(real review sentences, same source), so that an export never depends on the
network.
"""

import functools

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
        from kbert.data import rotten_tomatoes_split

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
    texts = verification_texts(count + 8, offset)
    if len(spec.text_inputs) == 1:
        return {spec.text_inputs[0]: texts[:count]}
    if spec.task == "multiple_choice":
        num_choices = spec.extra_dims[0]
        texts = verification_texts(count * (1 + num_choices), offset)
        step = 1 + num_choices
        return {
            "prompt": [texts[i * step] for i in range(count)],
            "choices": [texts[i * step + 1 : (i + 1) * step] for i in range(count)],
        }
    first, second = spec.text_inputs
    return {first: texts[:count], second: texts[1 : count + 1]}


def labelled_texts(count=200):
    """`(texts, labels)`: held-out reviews, label 1 fresh (positive), 0 rotten.

    Returns `None` when the corpus is unavailable: accuracy is then not
    measured.

    Example:
    >>> texts, labels = labelled_texts(200)
    """
    split = _split()
    if split is None:
        return None
    texts, labels = split["test"]
    return list(texts[:count]), list(labels[:count])


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
