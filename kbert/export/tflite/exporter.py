"""TFLite export for Android, in three flavours.

- `"string"`: text in, the tokenizer inside the model (tf-text's
  `FastBertTokenizer`, i.e. the tokenizer's `normalization="tflite"`).
  Builtin ops plus tensorflow-text's TFLite custom ops, no Flex (TF Select)
  ops: it runs on an interpreter with tensorflow-text's op registrar linked
  in. Dynamic batch; the sequence length is the preprocessor's.
- `"token_ids"`: `token_ids`, `segment_ids`, `padding_mask` in, builtin ops
  only: any TFLite interpreter runs it. Batch 1 and a dynamic sequence
  length by default.
- `"mediapipe"`: the token-ids model with static `[1, sequence_length]`
  inputs named `ids`, `mask`, `segment_ids` and BERT metadata (vocabulary,
  labels), as MediaPipe Tasks' `TextClassifier` and the TFLite Task
  Library's `BertNLClassifier` / `BertQuestionAnswerer` load it.

Quantization: `"float16"` (weights), `"dynamic_int8"` (weights, int8
kernels at run time) or `"int8"` (weights and activations, calibrated on real
sentences; token-id flavours).

The model is written through Keras' `ExportArchive` and converted from that
SavedModel: converting `tf.saved_model.save(model)` or concrete functions can
silently drop the weights, which is why every artifact is run and compared
before it is kept.
"""

import keras
import numpy as np

from kbert.export.agreement import min_agreement_for
from kbert.export.formats import FLAVOURS
from kbert.export.formats import TFLITE_QUANTIZATIONS as QUANTIZATIONS
from kbert.export.on_tensorflow import export_on_tensorflow
from kbert.export.record import build_record, write_with_record
from kbert.export.spec import export_spec, forward, text_features
from kbert.export.tflite import metadata as tflite_metadata
from kbert.export.tflite.inputs import MEDIAPIPE_INPUTS, probe_inputs, tflite_preprocessor
from kbert.export.tflite.runner import TFLiteRunner, tflite_custom_ops
from kbert.export.tflite.verification import verify_tflite
from kbert.export.verification_data import (
    checked_features,
    inputs_of,
    pad_to,
    representative_texts,
    texts_to_features,
)
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_file
from kbert.utils.owned_temps import work_directory
from kbert.utils.strings import string_list

# Custom ops of tensorflow-text's TFLite registrar (`SELECT_TFTEXT_OPS`).
# The texts per example each MediaPipe task feeds its model.
MEDIAPIPE_TEXTS = {"TextClassifier": 1, "TextEmbedder": 1, "BertQuestionAnswerer": 2}

TF_TEXT_TFLITE_OPS = frozenset(
    [
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
        "RaggedTensorToTensor",
        "TFText>ByteSplit",
        "TFText>ByteSplitByOffsets",
        "TFText>FastSentencepieceDetokenize",
        "TFText>FastSentencepieceTokenize",
        "TFText>FastWordpieceDetokenize",
        "TFText>NgramsStringJoin",
        "TFText>RoundRobinGenerateMasks",
        "TFText>RoundRobinTrim",
        "TFText>SentenceFragmenterV2",
        "TFText>Utf8Binarize",
        "TFText>WhitespaceTokenizeWithOffsetsV2",
    ]
)


def tflite(
    model,
    path,
    flavour="token_ids",
    quantization=None,
    sequence_length=None,
    batch_size="auto",
    text_pairs=None,
    representative_texts=None,
    source=None,
    tolerance=None,
    min_agreement=None,
    overwrite=False,
):
    """Exports `model` to a verified TFLite file at `path`.

    Before the file appears at `path` it is run on `ai_edge_litert` (the
    `"mediapipe"` flavour also through MediaPipe's `TextClassifier`) on real
    sentences and compared with the Keras model: float32 within 1e-4;
    quantized ones within a relative bound (`checks.QUANTIZED_RELATIVE_TOLERANCE`)
    and with the same predictions on `min_agreement` of 500 held-out reviews
    (`kbert.export.agreement`). On a mismatch `ExportVerificationError` is
    raised and nothing is written.

    Args:
        model: a kbert task model; `"string"` and `"mediapipe"` need
            `model.preprocessor`.
        path: the `.tflite` file to write.
        flavour: `"string"`, `"token_ids"` or `"mediapipe"` (module docstring).
        quantization: None (float32), `"float16"`, `"dynamic_int8"` or
            `"int8"`.
        sequence_length: static sequence length (`"mediapipe"` and
            `"string"` default to the preprocessor's; `"token_ids"` to
            dynamic).
        batch_size: static batch size or None (dynamic). `"auto"`: 1 for
            the token-id flavours (one text at a time, as apps run them),
            dynamic for `"string"`.
        text_pairs: `True` for a classifier of sentence pairs.
        representative_texts: sentences to calibrate `"int8"` on (default:
            100 Rotten Tomatoes training reviews).
        source: where the model came from (preset directory or `.keras`
            file), kept in the export record for `kbert verify`.
        tolerance: overrides the verification bound (absolute for float32,
            relative to max |Keras| when quantized), e.g. to keep a full-int8
            model whose error you have measured and accept.
        min_agreement: the least share of predictions a quantized file must
            share with the Keras model (None: 0.99, or a mean cosine of 0.999
            for embeddings; `dynamic_int8` measured 0.994 on the fine-tuned
            MiniLM review classifier, full `int8` 0.77).
        overwrite: write over a `path` holding files kbert did not write
            (otherwise refused before any work; kbert's own earlier artifact
            is always replaced).

    Returns:
        The export record (a dict), with the verification figures.

    Example:
    >>> record = kbert.export.tflite(classifier, "classifier.tflite", flavour="string")
    >>> record["text_inputs"], record["verification"]["runtime"]
    (['text'], 'ai_edge_litert + tensorflow-text TFLite ops (...)')
    >>> # Android apps: flavour="mediapipe"; smaller: quantization="dynamic_int8"
    """
    check_target(path, "tflite", overwrite)
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}; got {flavour!r}.")
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS}; got {quantization!r}."
        )
    if flavour == "mediapipe" and batch_size not in ("auto", 1):
        raise ValueError(
            'flavour="mediapipe" has batch size 1 (MediaPipe Tasks run one text at '
            f"a time); got batch_size={batch_size!r}."
        )
    if representative_texts is not None:
        representative_texts = string_list(representative_texts, "representative_texts")
    model = model.merge_lora()  # a LoRA model exports as the plain model it equals
    spec = export_spec(model, text_pairs)
    options = _options(model, spec, flavour, quantization, sequence_length, batch_size)
    options["text_pairs"] = text_pairs
    options["representative_texts"] = representative_texts
    options["tolerance"] = tolerance
    options["min_agreement"] = min_agreement_for(spec, min_agreement)  # as recorded
    if keras.backend.backend() != "tensorflow":
        return export_on_tensorflow(
            model,
            "kbert.export.tflite.exporter:tflite",
            path,
            cross_check=lambda artifact: verify_tflite(model, spec, artifact, options),
            flavour=flavour,
            quantization=quantization,
            sequence_length=options["sequence_length"],
            batch_size=options["batch_size"],
            text_pairs=text_pairs,
            representative_texts=representative_texts,
            source=source,
            tolerance=tolerance,
            min_agreement=min_agreement,
        )
    with atomic_file(path) as tmp:
        model_bytes = convert(model, spec, options)
        if flavour == "mediapipe":
            model_bytes = _mediapipe_metadata(model_bytes, model, spec)
        with open(tmp, "wb") as file:
            file.write(model_bytes)
        verification = verify_tflite(model, spec, tmp, options)
        export_record = build_record(
            "tflite",
            model,
            spec,
            source,
            verification,
            flavour=flavour,
            quantization=quantization,
            text_pairs=bool(text_pairs),
            batch_size=options["batch_size"],
            sequence_length=options["sequence_length"],
            text_inputs=list(spec.text_inputs) if flavour == "string" else [],
            outputs=_output_names(spec, flavour),
        )
        write_with_record(tmp, "tflite", export_record, probe_inputs(TFLiteRunner(tmp)))
    return export_record


def _options(model, spec, flavour, quantization, sequence_length, batch_size):
    preprocessor = model.preprocessor
    if flavour in ("string", "mediapipe") and preprocessor is None:
        raise ValueError(
            f'flavour="{flavour}" needs the model\'s preprocessor (its vocabulary '
            'and sequence length); attach one or use flavour="token_ids".'
        )
    if flavour == "mediapipe" and spec.mediapipe_task is None:
        raise ValueError(
            'flavour="mediapipe" exports the models a MediaPipe task runs '
            "(TextClassifier: classifier; BertQuestionAnswerer: question answerer; "
            f"TextEmbedder: text embedder); got a {spec.task}."
        )
    if (
        flavour == "mediapipe"
        and len(spec.text_inputs) != MEDIAPIPE_TEXTS[spec.mediapipe_task]
    ):
        raise ValueError(
            f"MediaPipe's {spec.mediapipe_task} takes "
            f"{MEDIAPIPE_TEXTS[spec.mediapipe_task]} text(s) per example; the model "
            f"takes {len(spec.text_inputs)} ({', '.join(spec.text_inputs)})."
        )
    if flavour == "mediapipe" and getattr(model, "problem_type", None) == "regression":
        raise ValueError('flavour="mediapipe" needs class probabilities, not regression.')
    if flavour == "string":
        if "mask_positions" in spec.token_inputs:
            raise ValueError(
                f'flavour="string" does not support a {spec.task}: the TFLite '
                'tokenizer splits literal [MASK]; use flavour="token_ids".'
            )
        if spec.extra_dims:
            raise ValueError(
                f'flavour="string" does not support a {spec.task}: its string inputs '
                'are one text per row, not (batch, num_choices); use flavour="token_ids".'
            )
        if quantization == "int8":
            raise ValueError(
                'quantization="int8" calibrates on token ids: use it with '
                'flavour="token_ids" or "mediapipe".'
            )
    if batch_size == "auto":
        batch_size = None if flavour == "string" else 1
    if flavour == "mediapipe":
        batch_size = 1
    if flavour in ("string", "mediapipe") and sequence_length is None:
        sequence_length = preprocessor.sequence_length
    return {
        "flavour": flavour,
        "quantization": quantization,
        "sequence_length": sequence_length,
        "batch_size": batch_size,
    }


def _output_names(spec, flavour):
    if flavour == "mediapipe":
        return [theirs for _, theirs in spec.mediapipe_outputs]
    names = list(spec.output_names)
    if flavour == "string" and spec.per_token_outputs:
        names.append("token_ids")
    return names


def _endpoint(model, spec, options):
    """`(function, input_signature)` of the one signature the file holds."""
    import tensorflow as tf  # lazy: TF only while exporting

    flavour = options["flavour"]
    batch, length = options["batch_size"], options["sequence_length"]
    if flavour == "string":
        preprocessor = tflite_preprocessor(model.preprocessor, length)
        signature = {
            name: tf.TensorSpec([batch], tf.string, name=name) for name in spec.text_inputs
        }
        output_names = _output_names(spec, flavour)

        def from_text(texts):
            features, extras = text_features(preprocessor, spec, texts)
            outputs = {**forward(model, features), **extras}
            return {name: outputs[name] for name in output_names}

        return from_text, signature
    if flavour == "mediapipe":
        signature = {
            name: tf.TensorSpec([1, length], tf.int32, name=name)
            for name in MEDIAPIPE_INPUTS
        }

        def from_mediapipe_ids(inputs):
            features = {MEDIAPIPE_INPUTS[name]: value for name, value in inputs.items()}
            outputs = forward(model, features)
            return {theirs: outputs[ours] for ours, theirs in spec.mediapipe_outputs}

        return from_mediapipe_ids, signature
    signature = {}
    for name in spec.token_inputs:
        shape = (
            [batch, None] if name == "mask_positions" else [batch, *spec.extra_dims, length]
        )
        signature[name] = tf.TensorSpec(shape, tf.int32, name=name)

    def from_token_ids(inputs):
        return forward(model, inputs)

    return from_token_ids, signature


def convert(model, spec, options):
    """The TFLite flatbuffer (bytes) of one flavour, not yet verified.

    Example:
    >>> options = {"flavour": "token_ids", "quantization": None,
    ...            "sequence_length": None, "batch_size": 1}
    >>> model_bytes = convert(classifier, spec, options)
    >>> model_bytes[4:8]  # the TFLite file identifier
    b'TFL3'
    """
    import tensorflow as tf  # lazy: TF only while exporting

    function, signature = _endpoint(model, spec, options)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", function, input_signature=[signature])
    with work_directory("tflite") as work:
        archive.write_out(work, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(work)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if options["flavour"] == "string":
            # tf-text's ops become TFLite custom ops; any other TF op still
            # fails conversion (checked again below).
            converter.allow_custom_ops = True
        _quantize(converter, model, spec, options)
        try:
            model_bytes = converter.convert()
        except Exception as error:  # ConverterError: name what to change
            raise _conversion_error(error, options) from error
    _check_ops(model_bytes, options)
    return model_bytes


def _quantize(converter, model, spec, options):
    import tensorflow as tf  # lazy: TF only while exporting

    quantization = options["quantization"]
    if quantization is None:
        return
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "float16":
        converter.target_spec.supported_types = [tf.float16]
    elif quantization == "int8":
        converter.representative_dataset = lambda: _representative(model, spec, options)
        # Ops without an int8 kernel stay float.
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.TFLITE_BUILTINS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS,
        ]


def _representative(model, spec, options):
    """Calibration inputs for full-int8: real sentences, one at a time."""
    if model.preprocessor is None:
        raise ValueError(
            'quantization="int8" calibrates on real text: attach a preprocessor.'
        )
    texts = string_list(
        options.get("representative_texts") or representative_texts(),
        "representative_texts",
    )
    features, _ = texts_to_features(model.preprocessor, spec, inputs_of(spec, texts))
    what = "representative_texts, tokenized by the model's preprocessor"
    checked_features(model, features, what)
    if options["sequence_length"]:
        features = pad_to(features, options["sequence_length"])
    if "mask_positions" in spec.token_inputs:
        features["mask_positions"] = np.tile(np.array([[1, 2]], "int32"), (len(texts), 1))
    names = MEDIAPIPE_INPUTS if options["flavour"] == "mediapipe" else None
    rows = len(features["token_ids"])
    for i in range(rows):
        row = {name: value[i : i + 1] for name, value in features.items()}
        if names:
            row = {name: row[source] for name, source in names.items()}
        else:
            row = {name: row[name] for name in spec.token_inputs}
        yield row


def _conversion_error(error, options):
    message = str(error)
    if "StridedSlice" in message and options["flavour"] == "token_ids":
        return ValueError(
            "TFLite cannot convert this model with both batch and sequence length "
            "dynamic (its attention mask's [:, None, None, :] slice needs one "
            "static dimension): pass batch_size=1 (the default) or a "
            f"sequence_length.\n{message[-1500:]}"
        )
    return ValueError(f"TFLite conversion failed:\n{message[-3000:]}")


def _check_ops(model_bytes, options):
    custom = set(tflite_custom_ops(model_bytes))
    allowed = TF_TEXT_TFLITE_OPS if options["flavour"] == "string" else frozenset()
    unexpected = sorted(custom - allowed)
    if unexpected:
        raise ValueError(
            f"The TFLite model holds ops no {options['flavour']!r} runtime has: "
            f"{unexpected} (Flex/TF Select ops are never allowed)."
        )


def _mediapipe_metadata(model_bytes, model, spec):
    """Adds the BERT metadata, vocabulary and labels of the MediaPipe flavour."""
    from ai_edge_litert import interpreter as litert  # lazy: a heavy optional library

    interpreter = litert.Interpreter(model_content=model_bytes)
    inputs = [_signature_name(d["name"]) for d in interpreter.get_input_details()]
    runner = interpreter.get_signature_runner()
    index_to_output = {d["index"]: name for name, d in runner.get_output_details().items()}
    outputs = [index_to_output[d["index"]] for d in interpreter.get_output_details()]
    metadata = tflite_metadata.bert_metadata(
        inputs,
        outputs,
        name=f"kbert {type(model).__name__}",
        description=f"A kbert {spec.task} with BERT tokenizer metadata.",
        labels=spec.labels or None,
    )
    vocabulary = "\n".join(model.preprocessor.tokenizer.get_vocabulary()) + "\n"
    files = {"vocab.txt": vocabulary.encode("utf-8")}
    if spec.labels:
        files["labels.txt"] = ("\n".join(spec.labels) + "\n").encode("utf-8")
    return tflite_metadata.populate(model_bytes, metadata, files)


def _signature_name(tensor_name):
    """`serving_default_ids:0` -> `ids`."""
    name = tensor_name.split(":")[0]
    prefix = "serving_default_"
    return name[len(prefix) :] if name.startswith(prefix) else name


def keras_litert(model, path, **kwargs):
    """Keras' `model.export(path, format="litert")`: strings in when the model
    has a preprocessor (flavour `"string"`), token ids otherwise."""
    kwargs.setdefault(
        "flavour", "string" if getattr(model, "preprocessor", None) else "token_ids"
    )
    return tflite(model, path, **kwargs)
