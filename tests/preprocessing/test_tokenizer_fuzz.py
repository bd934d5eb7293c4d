"""Fuzz: the exact-mode tokenizer against Hugging Face `tokenizers` on
seeded random Unicode text.

2,400 strings (and one sample of every block) built from every Unicode block Python's `unicodedata` knows
(planes 0-3 and 14, 128-code-point chunks with an assigned character),
emoji sequences (skin tones, ZWJ families, flags, keycaps), combining marks,
controls, zero-width and other space characters, words of 95-130 characters
around the 100-character limit, mixed case with accents, literal special
tokens and real vocabulary words. Every id and every offset must equal
`tokenizers.BertWordPieceTokenizer`'s (uncased and cased); the only code
points left out are those of `UNICODE_VERSION_GAP`.

Runs once, on the TensorFlow backend (string preprocessing is the same TF
ops on every backend; see test_tokenizer_parity.py).
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
    runs_once_on_tensorflow,
)

tokenizers = pytest.importorskip("tokenizers")
pytestmark = runs_once_on_tensorflow

COUNT = 2400
SEED = 13

# Code points that tokenize differently on their own ("a{c}b"), uncased;
# found by test_tokenizer_parity.test_every_code_point_against_hf, which pins
# their number (568; 149 of them differ cased too). Why: `tokenizers`' Rust
# Unicode tables (categories, whitespace, punctuation) are older than
# TensorFlow's ICU/RE2 ones, so marks, punctuation and format characters
# added since Unicode 9 (2016) are a letter for one side and a mark (deleted)
# or punctuation (split) for the other; a few are still unassigned in
# Python's Unicode 14 tables. Documented in `BertTokenizer`'s docstring.
UNICODE_VERSION_GAP = (
    (0x0061D, 0x0061D),
    (0x007FD, 0x007FD),
    (0x00890, 0x00891),
    (0x00898, 0x0089F),
    (0x008CA, 0x008E2),
    (0x009FD, 0x009FE),
    (0x00A76, 0x00A76),
    (0x00AFA, 0x00AFF),
    (0x00B55, 0x00B55),
    (0x00C04, 0x00C04),
    (0x00C3C, 0x00C3C),
    (0x00C77, 0x00C77),
    (0x00C84, 0x00C84),
    (0x00D00, 0x00D00),
    (0x00D3B, 0x00D3C),
    (0x00D81, 0x00D81),
    (0x00EBA, 0x00EBA),
    (0x00ECE, 0x00ECE),
    (0x0166D, 0x0166D),
    (0x01734, 0x01734),
    (0x0180F, 0x0180F),
    (0x01885, 0x01886),
    (0x01ABF, 0x01ACE),
    (0x01B7D, 0x01B7E),
    (0x01DF6, 0x01DFB),
    (0x02E43, 0x02E4F),
    (0x02E52, 0x02E5D),
    (0x0A82C, 0x0A82C),
    (0x0A8C5, 0x0A8C5),
    (0x0A8FF, 0x0A8FF),
    (0x0A9BD, 0x0A9BD),
    (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAD),
    (0x10EFD, 0x10EFF),
    (0x10F46, 0x10F50),
    (0x10F55, 0x10F59),
    (0x10F82, 0x10F89),
    (0x11070, 0x11070),
    (0x11073, 0x11074),
    (0x110C2, 0x110C2),
    (0x110CD, 0x110CD),
    (0x111C9, 0x111C9),
    (0x111CF, 0x111CF),
    (0x1123E, 0x1123E),
    (0x11241, 0x11241),
    (0x1133B, 0x1133B),
    (0x11438, 0x1143F),
    (0x11442, 0x11444),
    (0x11446, 0x11446),
    (0x1144B, 0x1144F),
    (0x1145A, 0x1145B),
    (0x1145D, 0x1145E),
    (0x11660, 0x1166C),
    (0x116B9, 0x116B9),
    (0x1182F, 0x11837),
    (0x11839, 0x1183B),
    (0x1193B, 0x1193C),
    (0x1193E, 0x1193E),
    (0x11943, 0x11946),
    (0x119D4, 0x119D7),
    (0x119DA, 0x119DB),
    (0x119E0, 0x119E0),
    (0x119E2, 0x119E2),
    (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38),
    (0x11A3B, 0x11A47),
    (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96),
    (0x11A98, 0x11A9C),
    (0x11A9E, 0x11AA2),
    (0x11B00, 0x11B09),
    (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D),
    (0x11C3F, 0x11C3F),
    (0x11C41, 0x11C45),
    (0x11C70, 0x11C71),
    (0x11C92, 0x11CA7),
    (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3),
    (0x11CB5, 0x11CB6),
    (0x11D31, 0x11D36),
    (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45),
    (0x11D47, 0x11D47),
    (0x11D90, 0x11D91),
    (0x11D95, 0x11D95),
    (0x11D97, 0x11D97),
    (0x11EF3, 0x11EF4),
    (0x11EF7, 0x11EF8),
    (0x11F00, 0x11F01),
    (0x11F36, 0x11F3A),
    (0x11F40, 0x11F40),
    (0x11F42, 0x11F4F),
    (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2),
    (0x13430, 0x13440),
    (0x13447, 0x13455),
    (0x16E97, 0x16E9A),
    (0x16F4F, 0x16F4F),
    (0x16FE2, 0x16FE2),
    (0x16FE4, 0x16FE4),
    (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46),
    (0x1E000, 0x1E006),
    (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A),
    (0x1E08F, 0x1E08F),
    (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF),
    (0x1E4EC, 0x1E4EF),
    (0x1E944, 0x1E94A),
    (0x1E95E, 0x1E95F),
)
GAP = frozenset(
    code_point
    for first, last in UNICODE_VERSION_GAP
    for code_point in range(first, last + 1)
)

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


def test_the_gap_table_is_the_pinned_one():
    assert len(GAP) == 568  # test_every_code_point_against_hf pins the same count


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_exact_mode_matches_hf_on_random_unicode(texts, cased_vocab, cased):
    assert len(texts) >= 2000
    assert not GAP & {ord(c) for text in texts for c in text}
    vocab = cased_vocab if cased else UNCASED_VOCAB
    reference = hf_tokenizer(vocab, lowercase=not cased).encode_batch(
        texts, add_special_tokens=False
    )
    tokenizer = BertTokenizer(vocab, lowercase=not cased)
    ids, starts, ends = (t.to_list() for t in tokenizer.tokenize_with_offsets(texts))
    assert_same(ids, ids_of(reference), texts, "ids")
    offsets = [list(zip(s, e)) for s, e in zip(starts, ends)]
    assert_same(offsets, [e.offsets for e in reference], texts, "offsets")
