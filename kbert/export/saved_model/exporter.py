"""SavedModel export for TensorFlow Serving.

The SavedModel holds two signatures, both with method name
`tensorflow/serving/predict`:

- `serving_default`: raw strings in (the model's `BertPreprocessor` runs in
  the graph), named outputs out;
- `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` in.

It is written with `tf.saved_model.save` on a module that tracks the model's
variables once (Keras' `model.export` stores each variable twice), and uses
no tensorflow-text op missing from the tensorflow-text that TF Serving
2.14-2.19 link (2.12).
"""

import os

import keras

from kbert.export import checks
from kbert.export.on_tensorflow import export_on_tensorflow
from kbert.export.record import build_record, write_with_record
from kbert.export.saved_model.runner import (
    TEXT_SIGNATURE,
    TOKEN_SIGNATURE,
    run_saved_model,
    run_saved_model_here,
)
from kbert.export.spec import (
    export_spec,
    forward,
    keras_outputs,
    text_features,
    token_input_shape,
)
from kbert.export.verification_data import texts_to_features, verification_data
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory

# tensorflow-text ops in the tensorflow-text 2.12 that TF Serving 2.14-2.19
# link (read from the tensorflow_text-2.12.1 wheel); TF Serving 2.20 links 2.20.
SERVING_TF_TEXT_OPS = frozenset(
    """CaseFoldUTF8 ConstrainedSequence FastBertNormalize
    FastWordpieceTokenizeWithOffsets FindSourceOffsets MaxSpanningTree
    NormalizeUTF8 NormalizeUTF8WithOffsetsMap PhraseTokenize RegexSplitWithOffsets
    RougeL SentenceFragments SentenceFragmentsV2 SentencepieceDetokenizeOp
    SentencepieceIdToStringOp SentencepieceOp SentencepieceStringToIdOp
    SentencepieceTokenizeOp SentencepieceTokenizeWithOffsetsOp
    SentencepieceVocabSizeOp SplitMergeTokenizeWithOffsets TFText>BoiseTagsToOffsets
    TFText>ByteSplitByOffsets TFText>ByteSplitWithOffsets
    TFText>FastSentencepieceDetokenize TFText>FastSentencepieceTokenize
    TFText>FastWordpieceDetokenize TFText>NgramsStringJoin TFText>OffsetsToBoiseTags
    TFText>PhraseDetokenize TFText>WhitespaceTokenizeWithOffsetsV2 TokenizerFromLogits
    UnicodeScriptTokenizeWithOffsets WhitespaceTokenizeWithOffsets
    WordpieceTokenizeWithOffsets""".split()
)
# tensorflow-text 2.21 ops that tensorflow-text 2.12 lacks.
NEWER_TF_TEXT_OPS = frozenset(
    ["TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim", "TFText>Utf8Binarize"]
)


def saved_model(model, path, text_pairs=None, source=None, overwrite=False):
    """Exports `model` as a TF Serving SavedModel at `path`, verified.

    Signatures: `serving_default` (strings in; needs `model.preprocessor`,
    otherwise it takes token ids like `serve_token_ids`) and
    `serve_token_ids`. Before the directory appears at `path`, a separate
    process with only TensorFlow and tensorflow-text's ops (no Keras) loads it and
    runs both signatures on real sentences; outputs must match the Keras
    model's within 1e-5, or `ExportVerificationError` is raised and nothing
    is written.

    Runs on the TensorFlow backend. From JAX or PyTorch the model is saved
    (`.keras`) and exported by a TensorFlow-backend subprocess; the result is
    then checked against the original model as well.

    Args:
        model: a kbert task model (or backbone).
        path: the SavedModel directory to write (replaced if it exists).
        text_pairs: `True` for a classifier of sentence pairs: the string
            signature then takes `text` and `text_pair`.
        source: where the model came from (preset directory or `.keras`
            file), kept in the export record for `kbert verify`.
        overwrite: write over a `path` holding files kbert did not write
            (otherwise refused before any work; kbert's own earlier artifact
            is always replaced).

    Returns:
        The export record (a dict): signatures, outputs, verification.

    Example:
    >>> record = kbert.export.saved_model(classifier, "out/classifier/1")
    >>> record["signatures"]["serving_default"], record["signatures"]["serve_token_ids"]
    (['text'], ['token_ids', 'segment_ids', 'padding_mask'])
    >>> # TF Serving: POST /v1/models/classifier:predict
    >>> #   {"instances": [{"text": "A fine film."}]}
    """
    check_target(path, "saved_model", overwrite)
    model = model.merge_lora()  # a LoRA model exports as the plain model it equals
    spec = export_spec(model, text_pairs)
    if keras.backend.backend() != "tensorflow":
        return export_on_tensorflow(
            model,
            "kbert.export.saved_model.exporter:saved_model",
            path,
            # The child has run it in a TensorFlow-only process already.
            cross_check=lambda artifact: verify_saved_model(
                model, spec, artifact, serving_process=False
            ),
            directory=True,
            text_pairs=text_pairs,
            source=source,
        )
    with atomic_directory(path) as tmp:
        _write(model, spec, tmp)
        ops = _check_serving_ops(tmp)
        verification = verify_saved_model(model, spec, tmp)
        export_record = build_record(
            "saved_model",
            model,
            spec,
            source,
            verification,
            text_pairs=bool(text_pairs),
            signatures={
                TEXT_SIGNATURE: list(spec.text_inputs)
                if model.preprocessor is not None
                else list(spec.token_inputs),
                TOKEN_SIGNATURE: list(spec.token_inputs),
            },
            text_signature=model.preprocessor is not None,
            tf_text_ops=sorted(ops & (SERVING_TF_TEXT_OPS | NEWER_TF_TEXT_OPS)),
        )
        write_with_record(tmp, "saved_model", export_record)
    return export_record


def _signature_functions(model, spec):
    import tensorflow as tf  # lazy: TF only while exporting

    token_specs = {
        name: tf.TensorSpec(token_input_shape(spec, name=name), tf.int32, name=name)
        for name in spec.token_inputs
    }

    # autograph=False: the traced code branches on Python values only, and
    # autograph rewriting the preprocessor's source cost 3.6-4.9 s of each
    # export (a tiny classifier: tracing 5.3-6.6 s with it, 1.7 s without).
    @tf.function(input_signature=[token_specs], autograph=False)
    def serve_token_ids(inputs):
        return forward(model, inputs)

    functions = {TOKEN_SIGNATURE: serve_token_ids.get_concrete_function()}
    if model.preprocessor is None:
        functions[TEXT_SIGNATURE] = functions[TOKEN_SIGNATURE]
        return functions
    text_specs = {
        name: tf.TensorSpec(
            [None] + ([spec.extra_dims[0]] if name == "choices" else []),
            tf.string,
            name=name,
        )
        for name in spec.text_inputs
    }

    @tf.function(input_signature=[text_specs], autograph=False)
    def serving_default(texts):
        features, extras = text_features(model.preprocessor, spec, texts)
        return {**forward(model, features), **extras}

    functions[TEXT_SIGNATURE] = serving_default.get_concrete_function()
    return functions


def _write(model, spec, directory):
    import tensorflow as tf  # lazy: TF only while exporting

    module = tf.Module()
    # The raw tf.Variables behind the Keras variables: each is saved once.
    module.model_variables = [variable.value for variable in model.variables]
    tf.saved_model.save(module, directory, signatures=_signature_functions(model, spec))


def graph_ops(directory):
    """Every op type in a SavedModel's graph and function library.

    Example:
    >>> "FastWordpieceTokenizeWithOffsets" in graph_ops(saved_model_dir)
    True
    """
    from tensorflow.core.protobuf import saved_model_pb2  # lazy: TF only for SavedModels

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(directory, "saved_model.pb"), "rb") as file:
        proto.ParseFromString(file.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    return ops


def _check_serving_ops(directory):
    ops = graph_ops(directory)
    newer = sorted(ops & NEWER_TF_TEXT_OPS)
    if newer:
        raise ValueError(
            f"The SavedModel uses tensorflow-text ops {newer}, which TF Serving "
            "2.14-2.19 lack (they link tensorflow-text 2.12)."
        )
    return ops


def verify_saved_model(model, spec, directory, serving_process=True):
    """Runs both signatures in a TensorFlow-only process against Keras.

    Returns the verification summary stored in the export record; raises
    `ExportVerificationError` on any difference over 1e-5. With
    `serving_process=False` the SavedModel is loaded in this process instead
    (the cross-backend check, after the serving process's check has passed).

    Example:
    >>> verification = verify_saved_model(classifier, spec, saved_model_dir)
    >>> sorted(verification["max_abs_diff"])
    ['serve_token_ids', 'serving_default']
    """
    data = verification_data(model, spec)
    runs = [(TOKEN_SIGNATURE, batch) for batch in data.token_batches]
    expected = [keras_outputs(model, batch) for batch in data.token_batches]
    extras = None
    if model.preprocessor is not None:
        runs.append((TEXT_SIGNATURE, data.texts))
        features, extras = texts_to_features(model.preprocessor, spec, data.texts)
        expected.append(keras_outputs(model, features))
    if serving_process:
        outputs, _, modules = run_saved_model(directory, runs)
        imported = sorted({"kbert", "keras"} & set(modules))
        if imported:
            raise RuntimeError(
                f"The serving process imported {imported}; TF Serving has neither."
            )
        runtime = "tensorflow + tensorflow-text ops, a process without Keras or kbert"
    else:
        outputs = run_saved_model_here(directory, runs)
        runtime = "tf.saved_model.load in the exporting process"
    diffs = {}
    for (signature, _), got, want in zip(runs, outputs, expected):
        context = f"SavedModel signature {signature!r}"
        found = checks.check_close(got, want, checks.SAVED_MODEL_TOLERANCE, context)
        diffs[signature] = checks.merge_diffs(diffs.get(signature, {}), found)
        if signature == TEXT_SIGNATURE and extras:
            checks.check_equal(got, extras, context)
    return {
        "runtime": runtime,
        "inputs": data.source,
        "tolerance": checks.SAVED_MODEL_TOLERANCE,
        "max_abs_diff": diffs,
    }
