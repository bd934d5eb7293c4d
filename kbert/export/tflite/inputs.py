"""Inputs and outputs of TFLite files: what the exporter, its verification and
`kbert verify` all feed them and read back.

The `"mediapipe"` flavour names its inputs and outputs as MediaPipe Tasks
and the TFLite Task Library expect (`MEDIAPIPE_INPUTS`; outputs as the model
class declares, `mediapipe_outputs`);
the `"string"` flavour tokenizes with tf-text's TFLite tokenizer
(`tflite_preprocessor`).
"""

import numpy as np

from kbert.export.verification_data import pad_to, verification_texts
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer

# MediaPipe-flavour input names -> the kbert names of `ExportSpec`.
MEDIAPIPE_INPUTS = {
    "ids": "token_ids",
    "mask": "padding_mask",
    "segment_ids": "segment_ids",
}


def tflite_preprocessor(preprocessor, sequence_length=None):
    """The model's preprocessor with tf-text's TFLite tokenizer.

    Same vocabulary, casing and truncation; `normalization="tflite"`
    (see `BertTokenizer` for where it differs from Hugging Face).

    Example:
    >>> tflite_preprocessor(preprocessor).tokenizer.normalization
    'tflite'
    """
    tokenizer = preprocessor.tokenizer
    if tokenizer.normalization == "tflite" and sequence_length in (
        None,
        preprocessor.sequence_length,
    ):
        return preprocessor
    strip = (
        tokenizer.lowercase if tokenizer.strip_accents is None else tokenizer.strip_accents
    )
    if strip != tokenizer.lowercase:
        raise ValueError(
            'flavour="string" tokenizes with tf-text\'s FastBertTokenizer, which '
            f"lowercases and strips accents together; this tokenizer has "
            f"lowercase={tokenizer.lowercase}, strip_accents={tokenizer.strip_accents}."
        )
    return BertPreprocessor(
        BertTokenizer(
            tokenizer.get_vocabulary(),
            lowercase=tokenizer.lowercase,
            strip_accents=tokenizer.strip_accents,
            normalization="tflite",
            max_input_chars_per_word=tokenizer.max_input_chars_per_word,
        ),
        sequence_length=sequence_length or preprocessor.sequence_length,
        truncation=preprocessor.truncation,
    )


def mediapipe_preprocessor(preprocessor):
    """A preprocessor that tokenizes as MediaPipe's `TextClassifier` does.

    MediaPipe's WordPiece tokenizer lowercases but keeps accents (`café`
    stays `café`, where uncased BERT says `cafe`): the tokenizer's
    `normalization="mediapipe"`; measured on accented, Greek, CJK, ligature
    and full-width text, and on `DIVERGENCE_TEXTS` at every export.

    Example:
    >>> mediapipe_preprocessor(preprocessor).tokenizer.strip_accents
    False
    """
    tokenizer = preprocessor.tokenizer
    return BertPreprocessor(
        BertTokenizer(
            tokenizer.get_vocabulary(),
            normalization="mediapipe",
            max_input_chars_per_word=tokenizer.max_input_chars_per_word,
        ),
        sequence_length=preprocessor.sequence_length,
        truncation=preprocessor.truncation,
    )


def deployment_preprocessor(preprocessor, flavour, sequence_length=None):
    """`(preprocessor, name)`: how a flavour's app tokenizes, and who does it.

    `"string"`: the tf-text tokenizer inside the file; `"mediapipe"`:
    MediaPipe's own; `"token_ids"`: the app's, i.e. the model's.

    Example:
    >>> deployment_preprocessor(preprocessor, "mediapipe")[1]
    'MediaPipe'
    """
    if flavour == "string":
        return (
            tflite_preprocessor(preprocessor, sequence_length),
            "TFLite (tf-text FastBertTokenizer)",
        )
    if flavour == "mediapipe":
        return mediapipe_preprocessor(preprocessor), "MediaPipe"
    return preprocessor, "the app (token ids in)"


def run_rows(runner, feeds):
    """Runs a batch, one row at a time when the file has a static batch of 1.

    Example:
    >>> from kbert.export.tflite.runner import TFLiteRunner
    >>> run_rows(TFLiteRunner(tflite_file), token_inputs)["logits"].shape  # batch 1 file
    (3, 2)
    """
    first = next(iter(runner.input_details))
    if runner.input_shape(first)[0] != 1:
        return runner(feeds)
    rows = len(next(iter(feeds.values())))
    outputs = [runner({k: v[i : i + 1] for k, v in feeds.items()}) for i in range(rows)]
    return {k: np.concatenate([o[k] for o in outputs]) for k in outputs[0]}


def run_tokens(runner, spec, flavour, features):
    """Token features (kbert names) through a token-id flavour's file.

    Returns `(outputs, features_used)`: inputs are padded to a static
    sequence length when the file has one; outputs get kbert names.

    Example:
    >>> from kbert.export.tflite.runner import TFLiteRunner
    >>> runner = TFLiteRunner(tflite_file)
    >>> outputs, used = run_tokens(runner, spec, "token_ids", token_inputs)
    >>> sorted(outputs)
    ['logits', 'probabilities']
    """
    first = "ids" if flavour == "mediapipe" else "token_ids"
    length = runner.input_shape(first)[-1]
    if length > 0:
        features = pad_to(features, length)
    feeds = features
    if flavour == "mediapipe":
        feeds = {name: features[source] for name, source in MEDIAPIPE_INPUTS.items()}
    outputs = run_rows(runner, feeds)
    if flavour == "mediapipe":
        kbert_names = {theirs: ours for ours, theirs in spec.mediapipe_outputs}
        outputs = {kbert_names[k]: v for k, v in outputs.items()}
    return outputs, features


def probe_inputs(runner):
    """A small fixed input for any flavour's signature: real text, or token ids.

    Example:
    >>> from kbert.export.tflite.runner import TFLiteRunner
    >>> sorted(probe_inputs(TFLiteRunner(tflite_file)))
    ['padding_mask', 'segment_ids', 'token_ids']
    """
    feeds = {}
    for name, detail in runner.input_details.items():
        dims = [int(d) for d in detail["shape_signature"]]
        shape = [d if d > 0 else (1 if i == 0 else 8) for i, d in enumerate(dims)]
        if detail["dtype"] in (np.bytes_, np.object_):
            feeds[name] = np.array(verification_texts(shape[0]), dtype=object)
        elif name in ("token_ids", "ids"):
            feeds[name] = np.full(shape, 5, "int32")
        elif name in ("padding_mask", "mask"):
            feeds[name] = np.ones(shape, "int32")
        else:
            feeds[name] = np.zeros(shape, "int32")
    return feeds
