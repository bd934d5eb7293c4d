"""The tokenizer tests' real text and the cased vocabulary trained on it.

The 37,608 texts (Rotten Tomatoes and VADER) that kbert's tokenizer and the
string flavours' in-graph tokenizers are compared on, and a cased WordPiece
vocabulary that Hugging Face `tokenizers` trains on them; and the uncased
vocabulary of all-MiniLM-L6-v2 as installed (the real one they are checked
with).
"""

import os

from kbert.data import rotten_tomatoes, vader_sentences
from kbert.sources import resolve_preset

# all-MiniLM-L6-v2's uncased 30,522-piece vocabulary, as installed.
MINILM_VOCABULARY = os.path.join(resolve_preset("all_minilm_l6_v2"), "vocab.txt")

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def corpus_texts():
    """Every Rotten Tomatoes review, then every VADER sentence."""
    return rotten_tomatoes()[0] + vader_sentences()[0]


def cased_vocabulary(texts, size=8000):
    """The tokens, in id order, of a cased vocabulary trained on `texts`."""
    import tokenizers

    trainer = tokenizers.BertWordPieceTokenizer(lowercase=False)
    trainer.train_from_iterator(texts, vocab_size=size, special_tokens=SPECIALS)
    vocabulary = trainer.get_vocab()
    return sorted(vocabulary, key=vocabulary.get)
