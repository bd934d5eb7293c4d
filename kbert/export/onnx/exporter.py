"""ONNX export from every backend: token ids in, dynamic batch and sequence
(or strings in: `flavour="string"`, `kbert.export.onnx.strings`).

- TensorFlow: `tf2onnx` (without its reshape optimizer, which rewires the
  attention heads' reshape into a wrong shape);
- PyTorch: `torch.onnx.export(..., dynamo=True)` with `dynamic_shapes`;
- JAX: `jax2onnx.to_onnx` on the model's stateless call, with symbolic
  dimensions bounded by `max_sequence_length`.

Inputs are int32 `token_ids`, `segment_ids`, `padding_mask` (and
`mask_positions` for a masked LM) of shape (batch, sequence) (with
`num_choices` between them for multiple choice); outputs are named as in
`kbert.export.spec`. The file is checked with `onnx.checker` and run with
`onnxruntime` before it is kept. The `"string"` flavour puts
onnxruntime-extensions' WordPiece tokenizer in front of that verified graph:
a batch of strings in (`text`), the same outputs.
"""

import os
import pathlib
import weakref

import keras
import numpy as np

from kbert.export import agreement, checks
from kbert.export.formats import DEFAULT_OPSET, ONNX_FLAVOURS
from kbert.export.onnx import strings
from kbert.export.onnx.axes import BATCH, POSITIONS, SEQUENCE, name_axes
from kbert.export.onnx.quantization import (
    QUANTIZATIONS,
    QuantizationRecipe,
    quantize_and_verify,
)
from kbert.export.onnx.runner import OnnxRunner
from kbert.export.record import build_record, write_with_record
from kbert.export.spec import (
    export_spec,
    forward,
    keras_outputs,
    stateless_forward,
    weights_fingerprint,
)
from kbert.export.verification_data import verification_data
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_file

MIN_OPSET = 17
JAX_MIN_OPSET = 18
# The last verified float32 file per model (while the model lives), with its
# verification: exporting one model to ONNX, quantized ONNX and OpenVINO in
# one process converts and verifies it once (tf2onnx takes 30 s for MiniLM).
# Keyed by backend, opset and a hash of the weights, so a model trained or
# changed in between is converted again.
_VERIFIED = weakref.WeakKeyDictionary()


def onnx(
    model,
    path,
    opset=DEFAULT_OPSET,
    flavour="token_ids",
    source=None,
    quantization=None,
    min_agreement=None,
    overwrite=False,
):
    """Exports `model` (token ids or strings in) to a verified ONNX file at `path`.

    Works on the current Keras backend. Before the file appears at `path`,
    `onnx.checker` checks it and `onnxruntime` runs it on real sentences at
    two different (batch, sequence) shapes; outputs must match the Keras
    model's within 1e-4, or `ExportVerificationError` is raised and nothing
    is written. A quantized file is made from that verified float32 one
    (`kbert.export.onnx.quantization`) and must then predict as the Keras
    model does on `min_agreement` of 500 held-out reviews.

    `flavour="string"` puts the WordPiece tokenizer in the graph
    (onnxruntime-extensions' `BertTokenizer` op, `kbert.export.onnx.strings`):
    the file takes a batch of texts, truncated and padded to the
    preprocessor's `sequence_length` as `predict` does, and answers the same
    outputs. It is verified once more, on the real sentences as text, within
    1e-4 of Keras `predict` (a quantized one against the quantized token-id
    graph it wraps), and the tokenizer's ids against the model's own; an app
    registers onnxruntime-extensions' custom-op library to run it.

    Args:
        model: a kbert task model or backbone.
        path: the `.onnx` file to write.
        opset: the ONNX opset (>= 17; default 18, which JAX's exporter needs).
        flavour: `"token_ids"` (default) or `"string"` (needs
            `model.preprocessor` and onnxruntime-extensions; one text per
            row: classifiers, token classifiers, embedders).
        source: where the model came from (preset directory or `.keras`
            file), kept in the export record for `kbert verify`.
        quantization: None (float32), `"dynamic_int8"` (recommended: int8
            dense layers, the head and, where the model needs it, outlier
            channels in float32),
            `"int8"` (static activation ranges too), `"float16"`, or a
            `kbert.export.onnx.quantization.QuantizationRecipe` (e.g.
            `QuantizationRecipe("blockwise")`: 8-bit blocks, slower, closer).
        min_agreement: the least share of predictions a quantized file must
            share with the Keras model (`kbert.export.agreement`; None: 0.99,
            or a mean cosine of 0.999 for embeddings); lower it to keep a
            quantization whose agreement you have measured.
        overwrite: write over a `path` holding files kbert did not write
            (otherwise refused before any work; kbert's own earlier artifact
            is always replaced).

    Returns:
        The export record (a dict), with the verification figures.

    Example:
    >>> record = kbert.export.onnx(classifier, "classifier.onnx")
    >>> record["verification"]["max_abs_diff"]["probabilities"] < 1e-4
    True
    >>> import onnxruntime
    >>> session = onnxruntime.InferenceSession("classifier.onnx")
    >>> [output.name for output in session.get_outputs()]
    ['logits', 'probabilities']
    >>> session.get_inputs()[0].shape  # named symbolic axes (kbert.export.onnx.axes)
    ['batch', 'sequence']
    >>> session.run(None, token_inputs)[1].shape
    (3, 2)
    >>> record = kbert.export.onnx(classifier, "classifier_int8.onnx",
    ...                            quantization="dynamic_int8", min_agreement=0.5)
    >>> record["quantization"], record["quantized"]["agreement"]["kind"]
    ('dynamic_int8', 'argmax')
    >>> # Every letter is a piece of its vocabulary, as in BERT's (see .strings)
    >>> record = kbert.export.onnx(letters_classifier, "strings.onnx", flavour="string")
    >>> record["inputs"], record["runtimes"]
    (['text'], ['onnxruntime'])
    >>> import onnxruntime_extensions
    >>> options = onnxruntime.SessionOptions()
    >>> options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
    >>> session = onnxruntime.InferenceSession("strings.onnx", options)
    >>> texts = np.array(["A fine film.", "Dull."])  # a batch of texts
    >>> session.run(["probabilities"], {"text": texts})[0].shape
    (2, 2)
    """
    check_target(path, "onnx", overwrite)
    if opset < MIN_OPSET:
        raise ValueError(f"opset must be >= {MIN_OPSET}; got {opset}.")
    if opset < JAX_MIN_OPSET and keras.backend.backend() == "jax":
        raise ValueError(
            f"opset {opset} cannot be written from the JAX backend: jax2onnx's "
            f"graphs need opset >= {JAX_MIN_OPSET} (ReduceMean takes its axes as an "
            "input from 18 on). Export with opset >= 18, or from TensorFlow or PyTorch."
        )
    if flavour not in ONNX_FLAVOURS:
        raise ValueError(f"flavour must be one of {ONNX_FLAVOURS}; got {flavour!r}.")
    if quantization not in QUANTIZATIONS and not isinstance(
        quantization, QuantizationRecipe
    ):
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS} or a QuantizationRecipe; "
            f"got {quantization!r}."
        )
    model = model.merge_lora()  # a LoRA model exports as the plain model it equals
    spec = export_spec(model)
    if flavour == "string":
        strings.check_string_model(model, spec)
    backend = keras.backend.backend()
    converters = {"tensorflow": _from_tensorflow, "torch": _from_torch, "jax": _from_jax}
    data = verification_data(model, spec)
    key = (backend, opset, weights_fingerprint(model))
    with atomic_file(path) as tmp:
        if _VERIFIED.get(model, (None,))[0] == key:
            serialized, verification = _VERIFIED[model][1:]
            with open(tmp, "wb") as file:
                file.write(serialized)
        else:
            proto = converters[backend](model, spec, opset, data.token_batches[0])
            _order_outputs(proto, spec)
            name_axes(proto, spec)
            _check_proto(proto, spec, opset)
            serialized = proto.SerializeToString()
            with open(tmp, "wb") as file:
                file.write(serialized)
            verification = verify_onnx(model, spec, tmp, data)
            _VERIFIED[model] = (key, serialized, verification)
        quantized = None
        if quantization:
            quantized = quantize_and_verify(model, spec, tmp, quantization, min_agreement)
        details = {"inputs": list(spec.token_inputs), "flavour": flavour}
        probe = data.token_batches[-1]
        if flavour == "string":
            details, probe = _with_tokenizer(model, spec, tmp, data, quantized)
        export_record = build_record(
            "onnx",
            model,
            spec,
            source,
            verification,
            **details,
            opset=opset,
            converter={
                "tensorflow": "tf2onnx",
                "torch": "torch.onnx (dynamo)",
                "jax": "jax2onnx",
            }[backend],
            quantization=quantization
            if quantization is None or isinstance(quantization, str)
            else "custom",
        )
        if quantized:
            export_record["quantized"] = quantized
        write_with_record(tmp, "onnx", export_record, probe)
    return export_record


def _with_tokenizer(model, spec, path, data, quantized):
    """Puts the tokenizer in front of the verified token-id file at `path`
    and verifies the string file on the real sentences as text: within 1e-4
    of Keras (float32) or of the quantized token-id file it wraps, with the
    tokenizer's ids checked against the model's own
    (`strings.tokenization_check`). Returns the record's details and a probe
    (two texts)."""
    import onnx as onnx_lib  # lazy: a heavy optional library

    texts, features = data.texts, data.token_batches[0]
    if quantized:
        want, against = OnnxRunner(path)(features), "the quantized token-id graph"
    else:
        want, against = keras_outputs(model, features), "Keras"
    merged = strings.prepend_tokenizer(onnx_lib.load(path), model.preprocessor, spec)
    onnx_lib.save(merged, path)
    # The ids first (the message then says it is the tokenizer), the outputs then.
    tokenizer = strings.tokenization_check(model, spec, texts)
    feeds = strings.string_feeds(spec, texts)
    got = OnnxRunner(path)(feeds)
    context = f"ONNX (string) on {len(feeds[spec.text_inputs[0]])} real sentences as text"
    outputs = {k: got[k] for k in spec.output_names}
    if quantized:
        diffs = _check_same_predictions(spec, outputs, want, features, quantized, context)
    else:
        diffs = checks.check_close(outputs, want, checks.FLOAT_TOLERANCE, context)
    if spec.per_token_outputs:
        checks.check_equal(got, {"token_ids": features["token_ids"]}, context)
    tokenizer["verification"] = {
        "inputs": data.source,
        "against": against,
        "tolerance": None if quantized else checks.FLOAT_TOLERANCE,
        "max_abs_diff": diffs,
    }
    outputs = list(spec.output_names) + (["token_ids"] if spec.per_token_outputs else [])
    details = {
        "inputs": list(spec.text_inputs),
        "flavour": "string",
        "text_inputs": list(spec.text_inputs),
        "sequence_length": model.preprocessor.sequence_length,
        "outputs": outputs,
        "runtimes": ["onnxruntime"],
        "custom_ops": "onnxruntime-extensions",
        "tokenizer": tokenizer,
    }
    probe = {name: value[:2] for name, value in feeds.items()}
    return details, probe


def _check_same_predictions(spec, got, want, features, quantized, context):
    """A quantized string file against the quantized token-id graph it wraps:
    the same predictions (at the quantization's `min_agreement`), not 1e-4.
    onnxruntime fuses the id graph's Add + LayerNormalization
    (SkipLayerNormalization) alone but not behind the tokenizer's Loop, and
    with run-time int8 scales that float rounding moves logits by about 1e-2
    (0.007 measured on the demo classifier, dynamic_int8); the id graph
    itself passed the agreement gate on the held-out reviews. Returns the
    max |diff| per output, for the record."""
    scores, kind = agreement.prediction_scores(spec, got, want, features)
    diffs = checks.max_abs_diff(got, want, "The string file")
    bound = quantized["agreement"]["min_agreement"]
    if scores is not None and float(np.mean(scores)) < bound:
        raise checks.ExportVerificationError(
            f"{context}: {kind} agreement with the quantized token-id graph it wraps "
            f"is {float(np.mean(scores)):.4f}, below min_agreement={bound}. "
            "The artifact is not written."
        )
    return diffs


def _input_names(spec):
    return list(spec.token_inputs)


def _from_tensorflow(model, spec, opset, sample):
    # lazy: TensorFlow and tf2onnx only for an export from the TensorFlow backend
    import tensorflow as tf
    from tf2onnx import optimizer, tf_loader, tfonnx
    from tf2onnx.convert import tensor_names_from_structed

    signature = [
        tf.TensorSpec(_shape(spec, name, None), tf.int32, name=name)
        for name in spec.token_inputs
    ]

    # autograph=False: as in the SavedModel exporter, nothing to rewrite.
    @tf.function(input_signature=signature, autograph=False)
    def function(*inputs):
        outputs = forward(model, dict(zip(spec.token_inputs, inputs)))
        return {name: outputs[name] for name in spec.output_names}

    concrete = function.get_concrete_function()
    inputs = [t.name for t in concrete.inputs if t.dtype != tf.resource]
    outputs = [t.name for t in concrete.outputs if t.dtype != tf.resource]
    renames = tensor_names_from_structed(concrete, inputs, outputs)
    frozen = tf_loader.from_function(concrete, inputs, outputs)
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(frozen, name="")
        onnx_graph = tfonnx.process_tf_graph(
            graph,
            opset=opset,
            input_names=inputs,
            output_names=outputs,
            tensors_to_rename=renames,
            continue_on_error=False,
        )
        # tf2onnx's reshape optimizer computes a wrong target shape for the
        # attention heads' reshape (onnxruntime then fails at run time).
        optimizers = {
            name: factory
            for name, factory in optimizer._get_optimizers().items()
            if name != "reshape_optimizer"
        }
        # catch_errors=False: otherwise tf2onnx deep-copies the whole graph,
        # weights included, before every pass (46 s of a MiniLM export); a
        # pass that fails now fails the export instead of being skipped.
        onnx_graph = optimizer.optimize_graph(
            onnx_graph, catch_errors=False, optimizers=optimizers
        )
        return onnx_graph.make_model(f"kbert {type(model).__name__}")


def _shape(spec, name, batch):
    if name == "mask_positions":
        return [batch, None]
    return [batch, *spec.extra_dims, None]


def _from_torch(model, spec, opset, sample):
    import torch  # lazy: only on the torch backend

    backbone = getattr(model, "backbone", model)

    class Exported(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            outputs = forward(self.inner, dict(zip(spec.token_inputs, inputs)))
            return tuple(outputs[name] for name in spec.output_names)

    batch = torch.export.Dim(BATCH)
    sequence = torch.export.Dim(SEQUENCE, max=backbone.max_sequence_length)
    positions = torch.export.Dim(POSITIONS)
    sequence_axis = 1 + len(spec.extra_dims)
    dynamic_shapes = tuple(
        {0: batch, 1: positions}
        if name == "mask_positions"
        else {0: batch, sequence_axis: sequence}
        for name in spec.token_inputs
    )
    args = tuple(
        torch.from_numpy(np.asarray(sample[name], "int32")) for name in spec.token_inputs
    )
    program = torch.onnx.export(
        Exported(model).eval(),
        args,
        dynamo=True,
        opset_version=opset,
        input_names=list(spec.token_inputs),
        output_names=list(spec.output_names),
        dynamic_shapes=(dynamic_shapes,),
        verbose=False,
    )
    return program.model_proto


def _load_jax2onnx_plugins():
    """Loads jax2onnx's `jax.*` plugins only.

    `to_onnx` otherwise imports all ~500 plugin modules (Flax, Equinox,
    examples) on its first call: 25 s instead of 5 s, for primitives a Keras
    model never emits. Falls back to the full import if that API changed.
    """
    try:
        from jax2onnx.plugins import plugin_system  # lazy: only on the JAX backend
    except ImportError:
        return
    if getattr(plugin_system, "_already_imported_plugins", True):
        return
    root = pathlib.Path(os.path.dirname(plugin_system.__file__))
    plugin_system._import_tree(root / "jax", "jax2onnx.plugins.jax")
    plugin_system._already_imported_plugins = True


def _from_jax(model, spec, opset, sample):
    # lazy: JAX and jax2onnx only on the JAX backend
    import jax
    import jax.numpy as jnp
    from jax2onnx import to_onnx

    backbone = getattr(model, "backbone", model)
    _load_jax2onnx_plugins()
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    pure = stateless_forward(model)

    def function(*inputs):
        outputs = pure(trainable, non_trainable, dict(zip(spec.token_inputs, inputs)))
        return tuple(outputs[name] for name in spec.output_names)

    batch, sequence, positions = jax.export.symbolic_shape(
        f"{BATCH}, {SEQUENCE}, {POSITIONS}",
        constraints=(f"{SEQUENCE} <= {backbone.max_sequence_length}",),
    )
    shapes = [
        (batch, positions)
        if name == "mask_positions"
        else (batch, *spec.extra_dims, sequence)
        for name in spec.token_inputs
    ]
    return to_onnx(
        function,
        [jax.ShapeDtypeStruct(shape, jnp.int32) for shape in shapes],
        model_name=f"kbert_{type(model).__name__}",
        opset=opset,
        input_names=list(spec.token_inputs),
        output_names=list(spec.output_names),
    )


def _order_outputs(proto, spec):
    """Graph outputs in `spec.output_names` order (tf2onnx sorts dict keys)."""
    outputs = {o.name: o for o in proto.graph.output}
    if sorted(outputs) != sorted(spec.output_names):
        raise ValueError(
            f"The ONNX model's outputs are {sorted(outputs)}; expected {spec.output_names}."
        )
    ordered = [type(outputs[n])() for n in spec.output_names]
    for copy, name in zip(ordered, spec.output_names):
        copy.CopyFrom(outputs[name])
    del proto.graph.output[:]
    proto.graph.output.extend(ordered)


def _check_proto(proto, spec, opset):
    import onnx as onnx_lib  # lazy: a heavy optional library

    onnx_lib.checker.check_model(proto, full_check=True)
    versions = {o.domain: o.version for o in proto.opset_import}
    if versions.get("", versions.get("ai.onnx", 0)) < MIN_OPSET:
        raise ValueError(
            f"The ONNX model declares opset {versions}; expected >= {MIN_OPSET}."
        )
    names = [i.name for i in proto.graph.input]
    if names != list(spec.token_inputs):
        raise ValueError(
            f"The ONNX model's inputs are {names}; expected {spec.token_inputs}."
        )
    for graph_input in proto.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        if dims[0].dim_value or dims[-1].dim_value:
            raise ValueError(
                f"ONNX input {graph_input.name!r} has a static batch or sequence axis."
            )


def verify_onnx(model, spec, path, data):
    """Runs the file on onnxruntime at two shapes against the Keras model.

    Example:
    >>> data = verification_data(classifier, spec)
    >>> verify_onnx(classifier, spec, onnx_file, data)["shapes"]  # two (batch, sequence)
    [[16, 16], [8, 10]]
    """
    import onnxruntime  # lazy: a heavy optional library

    runner = OnnxRunner(path)
    diffs = {}
    for batch in data.token_batches:
        shape = batch["token_ids"].shape
        found = checks.check_close(
            runner(batch),
            keras_outputs(model, batch),
            checks.FLOAT_TOLERANCE,
            f"ONNX Runtime at input shape {shape}",
        )
        diffs = checks.merge_diffs(diffs, found)
    return {
        "runtime": f"onnxruntime {onnxruntime.__version__} (CPU)",
        "inputs": data.source,
        "shapes": [list(b["token_ids"].shape) for b in data.token_batches],
        "tolerance": checks.FLOAT_TOLERANCE,
        "max_abs_diff": diffs,
    }


def keras_onnx(model, path, opset_version=None, **kwargs):
    """Keras' `model.export(path, format="onnx")`: its `opset_version` is `opset`."""
    if opset_version is not None:
        kwargs["opset"] = opset_version
    return onnx(model, path, **kwargs)
