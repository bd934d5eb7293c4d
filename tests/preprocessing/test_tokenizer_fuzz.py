"""Fuzz: the exact-mode tokenizer against Hugging Face `tokenizers` on
seeded random Unicode text.

2,400 strings (and one sample of every block) built from every Unicode block Python's `unicodedata` knows
(planes 0-3 and 14, 128-code-point chunks with an assigned character),
emoji sequences (skin tones, ZWJ families, flags, keycaps), combining marks,
controls, zero-width and other space characters, words of 95-130 characters
around the 100-character limit, mixed case with accents, literal special
tokens and real vocabulary words. Every id and every offset must equal
`tokenizers.BertWordPieceTokenizer`'s (uncased and cased); the only code
points left out are those of `unicode_gap.GAP`, which
test_tokenizer_parity checks against every code point.

Runs once (`backend_independent`, in the PyTorch run): string preprocessing
is the same TF ops on every backend; see test_tokenizer_parity.py.
"""

import random
import unicodedata

import pytest

from kbert.preprocessing import BertTokenizer
from tests.preprocessing.test_tokenizer_parity import (
    SPECIALS,
    UNCASED_VOCAB,
    assert_same,
    hf_tokenizer,
    ids_of,
)
from tests.preprocessing.unicode_gap import GAP
from tests.test_case import ragged_lists

tokenizers = pytest.importorskip("tokenizers")
pytestmark = pytest.mark.backend_independent

COUNT = 2400
SEED = 13

SPACES = (
    " \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
ZERO_WIDTH = "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2063\ufeff\u00ad\u034f\u180e"
CONTROLS = [chr(c) for c in (*range(0, 32), *range(127, 160))]
ACCENTED = (
    "aAáÁàÀâÂäÄãÃåÅæÆçÇéÉèÈêÊëËíÍìÌîÎïÏñÑóÓòÒôÔöÖõÕøØœŒßẞúÚùÙûÛüÜýÝÿŸ"
    "İıŞşĞğŁłŽžČčŘřĦħǅǆǈǉΆάΣσςΐΰДдЁёЇїẞǰḱṩỆệ"
)
COMBINING = [
    chr(c)
    for c in (*range(0x300, 0x370), *range(0x1AB0, 0x1AC0), *range(0x1DC0, 0x1DF6), 0x20D7)
    if c not in GAP
]
EMOJI = "😀😂🥲🤖👍👋🙏🏳🏴❤✈☕⚽🇺🇫🌍🎉🧑👨👩👧👦🦰💻🔥"
SKIN_TONES = [chr(c) for c in range(0x1F3FB, 0x1F400)]
ZWJ = "\u200d"


def unicode_blocks():
    """Assigned code points, in 128-code-point chunks (about one per block);
    planes 2 and 3 (CJK ideographs only) every 16th chunk."""
    chunks = []
    for plane in (0, 1, 2, 3, 14):
        step = 128 * (16 if plane in (2, 3) else 1)
        for start in range(plane << 16, (plane + 1) << 16, step):
            chunk = [
                c
                for c in range(start, start + 128)
                if not 0xD800 <= c <= 0xDFFF
                and c not in GAP
                and unicodedata.category(chr(c)) != "Cn"
            ]
            if chunk:
                chunks.append(chunk)
    return chunks


def emoji_sequence(rng):
    kind = rng.randrange(5)
    if kind == 0:  # a person with a skin tone
        return rng.choice("👍👋🙏🧑👨👩") + rng.choice(SKIN_TONES)
    if kind == 1:  # a ZWJ family or profession
        return ZWJ.join(rng.choice("👨👩👧👦🧑💻🔥🦰❤") for _ in range(rng.randint(2, 4)))
    if kind == 2:  # a flag: two regional indicators
        return "".join(chr(0x1F1E6 + rng.randrange(26)) for _ in range(2))
    if kind == 3:  # a keycap
        return rng.choice("0123456789#*") + "\ufe0f\u20e3"
    return rng.choice(EMOJI) + rng.choice(["", "\ufe0f", "\ufe0e"])


def random_word(rng, blocks, words):
    kind = rng.randrange(10)
    if kind == 0:
        block = rng.choice(blocks)
        return "".join(chr(rng.choice(block)) for _ in range(rng.randint(1, 8)))
    if kind == 1:
        return emoji_sequence(rng)
    if kind == 2:  # letters with stacked combining marks, marks first sometimes
        marks = "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 3)))
        return (
            marks + rng.choice(words) if rng.random() < 0.2 else rng.choice(words) + marks
        )
    if kind == 3:  # controls and zero-width characters inside a word
        word = rng.choice(words)
        cut = rng.randint(0, len(word))
        inside = rng.choice(CONTROLS) if rng.random() < 0.5 else rng.choice(ZERO_WIDTH)
        return word[:cut] + inside + word[cut:]
    if kind == 4:  # around the 100-character word limit
        letters = rng.choice(["ab", "é", "xyzXYZ", "日本", "😀", ACCENTED[:20]])
        return "".join(rng.choice(letters) for _ in range(rng.randint(95, 130)))
    if kind == 5:
        return "".join(rng.choice(ACCENTED) for _ in range(rng.randint(1, 10)))
    if kind == 6:  # mixed case
        return "".join(c.upper() if rng.random() < 0.5 else c for c in rng.choice(words))
    if kind == 7:
        return rng.choice(SPECIALS) + rng.choice(["", rng.choice(words)])
    if kind == 8:
        return rng.choice("!?.,;:'\"()[]{}<>-_/\\@#$%^&*~`|+=¿¡«»…—") + rng.choice(words)
    return rng.choice(words)


def random_text(rng, blocks, words):
    pieces = []
    for _ in range(rng.randint(0, 12)):
        pieces.append(random_word(rng, blocks, words))
        roll = rng.random()
        pieces.append(" " if roll < 0.6 else "" if roll < 0.8 else rng.choice(SPACES))
    return "".join(pieces)


@pytest.fixture(scope="module")
def texts():
    rng = random.Random(SEED)
    blocks = unicode_blocks()
    with open(UNCASED_VOCAB, encoding="utf-8") as file:
        words = [w for w in file.read().split() if w.isalpha() and len(w) > 2][::7]
    texts = [random_text(rng, blocks, words) for _ in range(COUNT)]
    # Every block at least once: six of its characters, eight blocks a text.
    samples = [
        "".join(chr(c) for c in block[:: max(1, len(block) // 6)]) for block in blocks
    ]
    texts += [" ".join(samples[i : i + 8]) for i in range(0, len(samples), 8)]
    return texts


@pytest.fixture(scope="module")
def cased_vocab(tmp_path_factory):
    """The uncased vocabulary plus capitalized and upper-case forms of its words."""
    with open(UNCASED_VOCAB, encoding="utf-8") as file:
        tokens = file.read().split("\n")[:-1]
    extra = [form for t in tokens if t.isalpha() for form in (t.capitalize(), t.upper())]
    path = tmp_path_factory.mktemp("fuzz") / "vocab.txt"
    path.write_text("\n".join(dict.fromkeys(tokens + extra)) + "\n", "utf-8")
    return str(path)


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_exact_mode_matches_hf_on_random_unicode(texts, cased_vocab, cased):
    assert len(texts) >= 2000
    assert not GAP & {ord(c) for text in texts for c in text}
    vocab = cased_vocab if cased else UNCASED_VOCAB
    reference = hf_tokenizer(vocab, lowercase=not cased).encode_batch(
        texts, add_special_tokens=False
    )
    tokenizer = BertTokenizer(vocab, lowercase=not cased)
    ids, starts, ends = (ragged_lists(t) for t in tokenizer.tokenize_with_offsets(texts))
    assert_same(ids, ids_of(reference), texts, "ids")
    offsets = [list(zip(s, e)) for s, e in zip(starts, ends)]
    assert_same(offsets, [e.offsets for e in reference], texts, "offsets")
