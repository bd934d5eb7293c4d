"""The formats kbert exports to, in one table.

Each row of `EXPORTERS` says what a format is called, which flavours and
quantizations it offers, which function exports it (and which runs it for
Keras' `model.export(format=...)`), which runner runs its artifact, how an
artifact of it is recognised and where it keeps its export record, and
which function re-measures it for `kbert verify`. `kbert export`
(`commands.py`), the export record (`record.py`), `kbert verify`
(`measurements.py`), `kbert.export`'s public functions (`__init__.py`) and
`model.export` (`keras_formats.py`) all read this table: a new format is a
folder `kbert/export/<format>/` and one row here.

Plain Python: the command line reads it for its flags (and `--help`)
without loading Keras. Functions are named by import path
(`"module:attribute"`) and imported on first use (`load`).

Example:
>>> [exporter.name for exporter in EXPORTERS]
['saved_model', 'tflite', 'onnx', 'openvino']
>>> load(exporter_named("onnx").runner).__name__
'OnnxRunner'
"""

import dataclasses
import importlib

# TFLite: token ids in; strings in (tokenizer in the graph); MediaPipe Tasks.
FLAVOURS = ("string", "token_ids", "mediapipe")
# ONNX: token ids in; strings in (onnxruntime-extensions' tokenizer in the graph).
ONNX_FLAVOURS = ("token_ids", "string")
TFLITE_QUANTIZATIONS = (None, "float16", "dynamic_int8", "int8")
ONNX_QUANTIZATIONS = (None, "dynamic_int8", "int8", "float16")
OPENVINO_QUANTIZATIONS = (None, "int8")
# OpenVINO: token ids in (the default); strings in (openvino-tokenizers' WordPiece).
OPENVINO_FLAVOURS = ("token_ids", "string")
DEFAULT_OPSET = 18
# A quantized artifact must predict as the Keras model does on this share of
# the held-out reviews...
DEFAULT_MIN_AGREEMENT = 0.99
# ... and an embedder's embeddings keep this mean cosine with Keras's (0.99
# let through an int8 all-MiniLM-L6-v2 OpenVINO IR at 0.9977, its worst
# review at 0.983; the bf16 IR keeps 0.99999, export/README.md "Embedders").
DEFAULT_MIN_COSINE = 0.999
# ... on this many held-out reviews (0.99 then allows 5 different
# predictions); `kbert verify` measures as many by default, so that it judges
# an artifact on the texts its exporter verified it on. The Keras reference
# dominates the cost: eager MiniLM-L6 on torch took about 0.1 s per review on
# this 2-core machine (busy), i.e. a minute per export.
AGREEMENT_TEXTS = 500
# What `kbert verify` and `--format auto` rank artifacts by: batch-1 latency
# (a service answering one request at a time), or texts per second in
# batches (a batch job).
RANKS = ("latency", "throughput")
OPENVINO_XML = "openvino_model.xml"
# Where an artifact keeps its export record: a JSON file of this name inside
# a directory, an entry of this key in a file's own metadata.
RECORD_NAME = "kbert_export"


@dataclasses.dataclass(frozen=True)
class Exporter:
    """One row of `EXPORTERS`: everything kbert needs to know of a format.

    Fields named `"module:attribute"` are import paths, read with `load`.

    Attributes:
        name: the `kbert export --format` value, the record's `format` and
            the name of the public function `kbert.export.<name>`.
        export: `"module:<name>"`: `export(model, path, source=None,
            overwrite=False, **options) -> record`, writes and verifies.
        options: the keyword arguments of `export` that `kbert export`
            passes from its flags of the same name; `kbert export` refuses
            any other flag of a format (`kbert.export.commands.check_flags`).
        quantized_options: those of `options` that act on a quantized
            artifact only: refused without `--quantization`.
        flavours: the values of its `flavour=` (`()`: none).
        quantizations: the values of its `quantization=` (`(None,)`: float32
            only).
        runner: `"module:class"`: `Runner(path)(feeds) -> outputs`, dicts of
            NumPy arrays keyed by input and output name, on the format's
            own runtime.
        measure: `"module:function"`: re-measures a written artifact for
            `kbert verify`: `measure(artifact, record, model, spec, texts,
            features, repeats, runtime)` returns a dict with `outputs`,
            `features` (the inputs the outputs answer), the timers `one`
            (a call on one example) and `many` (all the examples in batches
            of `kbert.export.measurements.BATCH_SIZE`, each as fast as the
            runtime runs many), optionally `close` (after timing), which
            `measurements.time_rows` times interleaved with the other rows;
            or, for a runtime in a process of its own, `seconds` (batch-1
            latency over `repeats` calls) and `batch_seconds` measured
            there; `runtime`,
            `format` (the table's words), `bound`
            (`{"tolerance", "relative", "min_agreement"}`: the bound its
            exporter verified it with, for the `kbert verify` gate; None
            where it does not bound that) and, optionally, `tokenizer` (a
            note below the table).
        runtimes: the runtimes `kbert verify` runs an artifact on, one table
            row each (`measure`'s `runtime`).
        optional_runtimes: `{runtime: module}`: runtimes shown only when
            that module is installed.
        suffix: how a file artifact's name ends (`None`: a directory).
        marker: the file that identifies a directory artifact.
        record_file: where a directory artifact keeps its record, inside it.
        embed_record: `"module:function"`, file artifacts: `(data, key,
            text) -> data`, the file's bytes with `text` stored under `key`.
        read_embedded: `"module:function"`, file artifacts: `(path, key) ->
            text or None`.
        keras_name: the `format=` of Keras' `model.export` it answers.
        keras_export: `"module:function"`: `(model, path, **kwargs) ->
            record`, what `model.export(path, format=keras_name, **kwargs)`
            calls.
    """

    name: str
    export: str
    options: tuple
    quantized_options: tuple
    flavours: tuple
    quantizations: tuple
    runner: str
    measure: str
    runtimes: tuple
    optional_runtimes: dict
    suffix: str | None
    marker: str | None
    record_file: str | None
    embed_record: str | None
    read_embedded: str | None
    keras_name: str
    keras_export: str


EXPORTERS = (
    Exporter(
        name="saved_model",
        export="kbert.export.saved_model.exporter:saved_model",
        options=("text_pairs",),
        quantized_options=(),
        flavours=(),
        quantizations=(None,),
        runner="kbert.export.saved_model.runner:SavedModelRunner",
        measure="kbert.export.saved_model.measure:measure",
        runtimes=("default",),
        optional_runtimes={},
        suffix=None,
        marker="saved_model.pb",
        # TF Serving ignores assets.extra; its warm-up requests live there too.
        record_file=f"assets.extra/{RECORD_NAME}.json",
        embed_record=None,
        read_embedded=None,
        keras_name="tf_saved_model",
        keras_export="kbert.export.saved_model.exporter:saved_model",
    ),
    Exporter(
        name="tflite",
        export="kbert.export.tflite.exporter:tflite",
        options=(
            "flavour",
            "quantization",
            "sequence_length",
            "batch_size",
            "text_pairs",
            "tolerance",
            "min_agreement",
        ),
        quantized_options=("min_agreement",),
        flavours=FLAVOURS,
        quantizations=TFLITE_QUANTIZATIONS,
        runner="kbert.export.tflite.runner:TFLiteRunner",
        measure="kbert.export.tflite.measure:measure",
        runtimes=("default",),
        optional_runtimes={},
        suffix=".tflite",
        marker=None,
        record_file=None,
        # An entry of the flatbuffer's `metadata` list.
        embed_record="kbert.export.tflite.flatbuffer:embed_text",
        read_embedded="kbert.export.tflite.flatbuffer:read_text",
        keras_name="litert",
        keras_export="kbert.export.tflite.exporter:keras_litert",
    ),
    Exporter(
        name="onnx",
        export="kbert.export.onnx.exporter:onnx",
        options=("opset", "flavour", "quantization", "min_agreement"),
        quantized_options=("min_agreement",),
        flavours=ONNX_FLAVOURS,
        quantizations=ONNX_QUANTIZATIONS,
        runner="kbert.export.onnx.runner:OnnxRunner",
        measure="kbert.export.onnx.measure:measure",
        runtimes=("onnxruntime", "openvino", "openvino_f32"),
        optional_runtimes={"openvino": "openvino", "openvino_f32": "openvino"},
        suffix=".onnx",
        marker=None,
        record_file=None,
        # A key of the model's `metadata_props`.
        embed_record="kbert.export.onnx.metadata:embed_text",
        read_embedded="kbert.export.onnx.metadata:read_text",
        keras_name="onnx",
        keras_export="kbert.export.onnx.exporter:keras_onnx",
    ),
    Exporter(
        name="openvino",
        export="kbert.export.openvino.exporter:openvino",
        # Agreement at OpenVINO's default precision (bf16 on AMX CPUs).
        options=("flavour", "quantization", "min_agreement"),
        quantized_options=(),
        flavours=OPENVINO_FLAVOURS,
        quantizations=OPENVINO_QUANTIZATIONS,
        runner="kbert.export.openvino.runner:OpenVinoRunner",
        measure="kbert.export.openvino.measure:measure",
        runtimes=("openvino", "openvino_f32"),
        optional_runtimes={},
        suffix=None,
        marker=OPENVINO_XML,
        record_file=f"{RECORD_NAME}.json",
        embed_record=None,
        read_embedded=None,
        keras_name="openvino",
        keras_export="kbert.export.openvino.exporter:keras_openvino",
    ),
)
NAMES = tuple(exporter.name for exporter in EXPORTERS)
# Every format's choices, for the command line's flags.
ALL_FLAVOURS = tuple(dict.fromkeys(f for e in EXPORTERS for f in e.flavours))
ALL_QUANTIZATIONS = tuple(dict.fromkeys(q for e in EXPORTERS for q in e.quantizations if q))


def exporter_named(name):
    """The row of `EXPORTERS` called `name`.

    Example:
    >>> exporter_named("tflite").flavours
    ('string', 'token_ids', 'mediapipe')
    """
    for exporter in EXPORTERS:
        if exporter.name == name:
            return exporter
    raise ValueError(f"Unknown export format {name!r}; kbert exports to {list(NAMES)}.")


def load(import_path):
    """The attribute an import path `"module:attribute"` names (imported now).

    Example:
    >>> load("kbert.export.checks:check_close").__name__
    'check_close'
    """
    module, _, name = import_path.partition(":")
    return getattr(importlib.import_module(module), name)


def check_exporter(exporter):
    """Raises `ValueError` naming what a row lacks: a field left empty, an
    import path that does not load a callable, a file artifact without its
    suffix and embedded record, a directory artifact without its marker and
    record file.

    Example:
    >>> check_exporter(exporter_named("onnx"))
    >>> check_exporter(dataclasses.replace(exporter_named("onnx"), runner=None))
    Traceback (most recent call last):
    ...
    ValueError: export format 'onnx': runner: not an import path 'module:attribute' (None).
    """
    problems = []
    for field in ("name", "keras_name"):
        if not getattr(exporter, field):
            problems.append(f"{field}: empty")
    for field in ("options", "quantized_options", "flavours", "quantizations", "runtimes"):
        if not isinstance(getattr(exporter, field), tuple):
            problems.append(f"{field}: not a tuple")
    if isinstance(exporter.options, tuple) and isinstance(
        exporter.quantized_options, tuple
    ):
        if not set(exporter.quantized_options) <= set(exporter.options):
            problems.append("quantized_options: not all of them in options")
    runtimes = exporter.runtimes or ()
    if not runtimes:
        problems.append("runtimes: empty")
    quantizations = exporter.quantizations or ()
    if not quantizations or quantizations[0] is not None:
        problems.append("quantizations: must start with None (float32)")
    if not isinstance(exporter.optional_runtimes, dict):
        problems.append("optional_runtimes: not a dict")
    elif not set(exporter.optional_runtimes) <= set(runtimes):
        problems.append("optional_runtimes: not all of them in runtimes")
    paths = ["export", "runner", "measure", "keras_export"]
    if exporter.suffix:
        paths += ["embed_record", "read_embedded"]
    elif not (exporter.marker and exporter.record_file):
        problems.append(
            "suffix, or marker and record_file: a file artifact needs its suffix, "
            "a directory artifact its marker and record_file"
        )
    for field in paths:
        path = getattr(exporter, field)
        if not isinstance(path, str) or ":" not in path:
            problems.append(f"{field}: not an import path 'module:attribute' ({path!r})")
            continue
        try:
            value = load(path)
        except (ImportError, AttributeError) as error:
            problems.append(f"{field}: {path} does not load ({error})")
            continue
        if not callable(value):
            problems.append(f"{field}: {path} is not callable")
    if (
        isinstance(exporter.export, str)
        and exporter.export.partition(":")[2] != exporter.name
    ):
        problems.append(f"export: the function must be called {exporter.name!r}")
    if problems:
        raise ValueError(f"export format {exporter.name!r}: " + "; ".join(problems) + ".")
