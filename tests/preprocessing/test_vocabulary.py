"""Vocabulary files and `train_vocabulary`."""

import pytest

from kbert.data import vader_sentences
from kbert.preprocessing import BertTokenizer, load_vocabulary, train_vocabulary
from tests.test_case import ragged_lists


def test_load_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK] \n[CLS]\n[SEP]\nhello\t\n\n", encoding="utf-8")
    assert load_vocabulary(str(path)) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]
    with pytest.raises(ValueError, match="a path to a vocab.txt file or a list"):
        load_vocabulary({"[PAD]": 0})


@pytest.mark.backend_independent
def test_train_vocabulary_then_tokenize_like_hugging_face(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    texts, _ = vader_sentences(sources=("tweets",))
    texts = texts[:600]
    tokens = train_vocabulary(
        texts, 600, lowercase=False, learn_params={"num_iterations": 2}
    )
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 400 < len(tokens) <= 600 and len(set(tokens)) == len(tokens)
    assert any(t.startswith("##") for t in tokens) and "The" in tokens
    tokenizer = BertTokenizer(tokens, lowercase=False)
    ids = ragged_lists(tokenizer(texts))
    flat = [i for row in ids for i in row]
    # Every character of the corpus is in the vocabulary: no [UNK] at all.
    assert tokenizer.unk_token_id not in flat
    path = tmp_path / "vocab.txt"
    tokenizer.save_assets(str(tmp_path))
    hf = tokenizers.BertWordPieceTokenizer(str(path), lowercase=False)
    expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert ids == expected


def test_train_vocabulary_needs_the_special_tokens():
    with pytest.raises(ValueError, match=r"must include \[CLS\]"):
        train_vocabulary(["a b"], 10, reserved_tokens=["[PAD]", "[UNK]", "[SEP]"])
