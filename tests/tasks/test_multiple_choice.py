import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.preprocessing import BertPreprocessor
from tests.tasks.tasks_helpers import (
    TOLERANCE,
    hf_logits,
    hf_tokenizer,
    max_abs_diff,
    quick_jit,
    random_hf_model,
    report,
    save_hf,
)
from tests.test_case import tiny_backbone

PROMPTS = ["The sky is", "Ada Lovelace wrote notes about", "The cat sat on the"]
CHOICES = [
    ["blue", "loud", "a big red fox that jumps in Paris and London and the river"],
    ["the engine", "the grass", "the sky"],
    ["mat", "river", "unseen"],
]
ANSWERS = [0, 0, 0]


@pytest.fixture(scope="module")
def hf_chooser(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_choice")
    tokenizer = hf_tokenizer(directory)
    model = random_hf_model("BertForMultipleChoice", seed=7)
    return model, tokenizer, save_hf(model, tokenizer, directory)


def test_raw_choices_match_transformers(hf_chooser):
    hf_model, hf_tok, directory = hf_chooser
    chooser = kbert.BertMultipleChoice.from_preset(
        directory, num_choices=3, sequence_length=12
    )
    logits = keras.ops.convert_to_numpy(chooser.predict((PROMPTS, CHOICES), verbose=0))
    encoded = hf_tok(
        [p for p in PROMPTS for _ in range(3)],
        [c for row in CHOICES for c in row],
        truncation=True,
        max_length=12,
        padding="max_length",
        return_tensors="np",
    )
    encoded = {k: v.reshape(3, 3, 12) for k, v in encoded.items()}
    # The packing itself: (prompt, choice) pairs, longest_first truncation.
    features = chooser.preprocess_samples((tf.constant(PROMPTS), tf.constant(CHOICES)))
    np.testing.assert_array_equal(features["token_ids"].numpy(), encoded["input_ids"])
    np.testing.assert_array_equal(
        features["segment_ids"].numpy(), encoded["token_type_ids"]
    )
    np.testing.assert_array_equal(
        features["padding_mask"].numpy(), encoded["attention_mask"]
    )
    diff = max_abs_diff(logits, hf_logits(hf_model, encoded).logits.numpy())
    report("BertMultipleChoice logits on raw choices vs BertForMultipleChoice", diff)
    assert diff <= TOLERANCE


def test_trains_and_evaluates_on_raw_choices(hf_chooser):
    chooser = kbert.BertMultipleChoice.from_preset(
        hf_chooser[2], num_choices=3, sequence_length=12, dropout=0.0
    )
    chooser.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=quick_jit())
    history = chooser.fit(
        (PROMPTS * 4, CHOICES * 4), ANSWERS * 4, batch_size=3, epochs=2, verbose=0
    )
    assert history.history["loss"][1] < history.history["loss"][0], history.history
    results = chooser.evaluate((PROMPTS, CHOICES), ANSWERS, verbose=0, return_dict=True)
    assert set(results) == {"loss", "sparse_categorical_accuracy"}
    dataset = tf.data.Dataset.from_tensor_slices(((PROMPTS, CHOICES), ANSWERS)).batch(3)
    again = chooser.evaluate(dataset, verbose=0, return_dict=True)
    assert again["loss"] == pytest.approx(results["loss"], abs=1e-5)
    assert results["loss"] < history.history["loss"][0]


def test_wrong_number_of_choices_is_an_error(hf_chooser):
    chooser = kbert.BertMultipleChoice(
        tiny_backbone(vocabulary_size=64),
        num_choices=3,
        preprocessor=BertPreprocessor.from_preset(hf_chooser[2], sequence_length=12),
    )
    with pytest.raises(Exception, match="exactly 3 choices"):
        chooser.preprocess_samples((tf.constant(["a"]), tf.constant([["x", "y"]])))
    with pytest.raises(ValueError, match="x=\\(prompts, choices\\)"):
        chooser.preprocess_samples(tf.constant(["a"]))
