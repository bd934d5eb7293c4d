"""The measurements of `kbert verify`: exported artifacts re-measured against
their Keras model, on real data.

Exporters verify an artifact before writing it; `kbert verify` measures one
already written, on each runtime it runs on (an ONNX file on onnxruntime and
OpenVINO). For each artifact and runtime: its size, the runtime it ran on, the
largest difference from the Keras model's outputs, agreement with Keras,
classifier accuracy when the user passes labelled data (`labelled`, e.g.
`kbert verify --data FILE`; never a guessed data set), the batch-1
latency (a service answering one request) and texts per second through
length-sorted batches of 32 (a batch job; OpenVINO then runs a request per
stream). A Keras row gives the float32 baseline; `fastest_row` ranks by
either. The rows of one table are timed interleaved (`time_rows`): round
after round, each row in turn, the order rotating, medians per row, so that
a machine busy for a while slows every row alike and not the one it ran.
`gate` checks each row against its bounds (by default the bound its exporter
verified it with: `kbert verify` exits 1 when a row misses it).
Below the table, each artifact that tokenizes on its own (TFLite `"string"`,
MediaPipe) gets a line on how its tokenizer reads accented and mobile-style
text (`kbert.export.checks`).
"""

import importlib.util
import os
import time

import keras
import numpy as np

from kbert.export import record as records
from kbert.export.checks import allowed_diff
from kbert.export.formats import RANKS, exporter_named, load
from kbert.export.spec import TOKEN_INPUTS, export_spec, keras_outputs
from kbert.export.verification_data import (
    checked_features,
    token_features,
    verification_inputs,
)
from kbert.presets.model_source import load_model
from kbert.utils.tables import markdown_table

COLUMNS = (
    "artifact",
    "format",
    "size MB",
    "runtime",
    "max |diff|",
    "accuracy",
    "agreement",
    "latency ms",
    "texts/s",
)
# Throughput is measured in batches of this many examples (`batches`), sorted
# by length (`by_length`), each cut to its longest where the runtime takes
# any length.
BATCH_SIZE = 32
PASSES = 3  # timed passes over the examples for texts/s (their median)


def artifact_size(path):
    """Bytes on disk of a file or directory.

    Example:
    >>> artifact_size(onnx_file) == os.path.getsize(onnx_file)
    True
    """
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )


def _artifact_name(path):
    """The file or directory name; `name/1` for a TF Serving version directory."""
    head, name = os.path.split(os.path.normpath(path))
    return f"{os.path.basename(head)}/{name}" if name.isdigit() else name


def _model(model, record):
    if model is None:
        model = record.get("source")
        if not model:
            raise ValueError(
                "This artifact does not say which model it came from: pass the "
                "model (a kbert preset directory or .keras file)."
            )
    return load_model(model) if isinstance(model, (str, os.PathLike)) else model


def label_ids(model, labels, where="labels"):
    """Label values -> class ids of `model`: names of its `id2label`, or ids.

    Example:
    >>> label_ids(classifier, ["1", 0])
    [1, 0]
    """
    names = {str(name): i for i, name in (getattr(model, "id2label", None) or {}).items()}
    ids = []
    for number, label in enumerate(labels, 1):
        text = str(label).strip()
        if text in names:
            ids.append(names[text])
        elif text.isdigit() and int(text) < model.num_classes:
            ids.append(int(text))
        else:
            known = f"its labels {sorted(names)} or " if names else ""
            raise ValueError(
                f"{where}: label {label!r} of example {number} is not one of the "
                f"model's classes ({known}class ids 0 to {model.num_classes - 1})."
            )
    return ids


def evaluation_data(model, spec, num_examples, labelled=None, where="labelled data"):
    """`(texts, features, labels)`: the first `num_examples` of `labelled`
    (`(texts, label values)`, texts a list or, for pairs, a tuple of two
    lists) with their class ids, or, without it, real sentences and no labels.

    Example:
    >>> texts, features, labels = evaluation_data(
    ...     classifier, spec, 20, (["A fine film.", "Dull."], [1, 0]))
    >>> labels.tolist(), features["token_ids"].shape[0]
    ([1, 0], 2)
    >>> evaluation_data(classifier, spec, 20)[2] is None  # agreement only
    True
    """
    if labelled is None:
        texts = verification_inputs(spec, num_examples)
        labels = None
    else:
        if getattr(model, "problem_type", None) != "single_label":
            raise ValueError(
                f"{where}: accuracy is measured for single-label classifiers; this "
                f"model is a {spec.task} ({getattr(model, 'problem_type', '')})."
            )
        columns, values = labelled
        columns = columns if isinstance(columns, tuple) else (columns,)
        if len(columns) != len(spec.text_inputs):
            raise ValueError(
                f"{where}: the model takes {len(spec.text_inputs)} text(s) per example "
                f"({', '.join(spec.text_inputs)}); got {len(columns)} column(s)."
            )
        texts = {
            name: list(column[:num_examples])
            for name, column in zip(spec.text_inputs, columns)
        }
        labels = np.array(label_ids(model, values[:num_examples], where))
    features = checked_features(
        model,
        token_features(model.preprocessor, spec, texts),
        "The evaluation texts, tokenized by the model's preprocessor",
    )
    return texts, features, labels


def first_row(rows):
    """The first example of a dict of batched inputs, as a batch of one.

    Example:
    >>> first_row({"token_ids": np.arange(6).reshape(3, 2)})
    {'token_ids': array([[0, 1]])}
    """
    return {name: np.asarray(value)[:1] for name, value in rows.items()}


def batches(rows, size=BATCH_SIZE, cut=False):
    """A dict of batched inputs (arrays or lists) as batches of `size`; with
    `cut`, its token inputs cut to its longest row (`padding_mask`), as
    users pad per batch.

    Example:
    >>> rows = {"token_ids": np.array([[5, 0, 0], [6, 7, 0], [8, 0, 0]]),
    ...         "padding_mask": np.array([[1, 0, 0], [1, 1, 0], [1, 0, 0]])}
    >>> [b["token_ids"].tolist() for b in batches(rows, size=2, cut=True)]
    [[[5, 0], [6, 7]], [[8]]]
    """
    count = len(next(iter(rows.values())))
    result = []
    for start in range(0, count, size):
        batch = {name: value[start : start + size] for name, value in rows.items()}
        if cut and "padding_mask" in batch:
            length = max(1, int(np.max(np.sum(np.asarray(batch["padding_mask"]), -1))))
            batch = {
                name: np.asarray(value)[..., :length] if name in TOKEN_INPUTS else value
                for name, value in batch.items()
            }
        result.append(batch)
    return result


def by_length(texts, features, labels=None):
    """`(texts, features, labels)` sorted by token count (stable), as a batch
    job sorts them so that each batch pads little.

    Example:
    >>> texts, features, labels = by_length(
    ...     {"text": ["a b c", "a"]}, {"padding_mask": np.array([[1, 1, 1], [1, 0, 0]])},
    ...     np.array([0, 1]))
    >>> texts["text"], labels.tolist()
    (['a', 'a b c'], [1, 0])
    """
    mask = np.asarray(features["padding_mask"])
    order = np.argsort(mask.reshape(len(mask), -1).sum(-1), kind="stable")
    texts = {name: [column[i] for i in order] for name, column in texts.items()}
    features = {name: np.asarray(value)[order] for name, value in features.items()}
    return texts, features, None if labels is None else np.asarray(labels)[order]


def time_rows(rows, repeats=20, passes=PASSES):
    """Times the rows of one table interleaved; returns them with `latency ms`
    and `texts/s` filled in.

    Each row made with `timed=False` carries its timers (`measure`'s `one`
    and `many`). After an untimed warm-up call of each, every round times
    one batch-1 call of each row (`repeats` rounds) and every pass round one
    pass over all the examples of each row (`passes` rounds), the order
    rotating by one row per round; each figure is that row's median. Rows
    without timers (timed in a process of their own, or already) are kept.

    Example:
    >>> rows = [artifact_row(onnx_file, classifier, 8, 2, timed=False), keras_row(
    ...     classifier, 8, 2, timed=False)]
    >>> [row["texts/s"] > 0 for row in time_rows(rows, repeats=2)]
    [True, True]
    """
    rows = [dict(row) for row in rows]
    timed = [row for row in rows if "timers" in row]
    try:
        for row in timed:
            row["timers"]["one"]()
            row["timers"]["many"]()
        latency = _interleaved(timed, "one", repeats)
        passes = _interleaved(timed, "many", passes)
    finally:
        for row in timed:
            close = row.pop("timers").get("close")
            if close is not None:
                close()
    for row, one, many in zip(timed, latency, passes):
        row["latency ms"] = one * 1e3
        row["texts/s"] = row["examples"] / many
    return rows


def _interleaved(rows, timer, rounds):
    """Median seconds of each row's `timer` over `rounds` rounds; a round
    runs every row once, starting one row later than the round before."""
    seconds = [[] for _ in rows]
    for round_ in range(rounds):
        for step in range(len(rows)):
            index = (round_ + step) % len(rows)
            start = time.perf_counter()
            rows[index]["timers"][timer]()
            seconds[index].append(time.perf_counter() - start)
    return [float(np.median(values)) for values in seconds]


def artifact_runtimes(path, installed=True):
    """The runtimes `kbert verify` runs an artifact on, one table row each.

    An ONNX file runs on onnxruntime and, when it is installed (or
    `installed=False`), on OpenVINO at its default precision for this CPU
    (`"openvino"`) and at float32 (`"openvino_f32"`); an OpenVINO IR on
    those two; a SavedModel or TFLite file on its own runtime (`"default"`).
    An artifact whose export record lists its `runtimes` (a string-flavour
    ONNX file: onnxruntime only) runs on those of the row's.

    Example:
    >>> artifact_runtimes(onnx_file)
    ('onnxruntime', 'openvino', 'openvino_f32')
    >>> artifact_runtimes(tflite_file)
    ('default',)
    """
    exporter = exporter_named(records.artifact_format(path))
    own = records.read_record(path).get("runtimes") if os.path.exists(path) else None
    return tuple(
        runtime
        for runtime in exporter.runtimes
        if (own is None or runtime in own)
        and (
            not installed
            or runtime not in exporter.optional_runtimes
            or importlib.util.find_spec(exporter.optional_runtimes[runtime]) is not None
        )
    )


def _quality(spec, got, want, labels):
    """`(accuracy, agreement)`: accuracy on labels, agreement with Keras."""
    if "embeddings" in spec.output_names:
        a, b = got["embeddings"], want["embeddings"]
        cosine = np.sum(a * b, -1) / (
            np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
        )
        return None, float(np.mean(cosine))
    name = next(iter(k for k in spec.output_names if k in got))
    same = np.argmax(got[name], -1) == np.argmax(want[name], -1)
    accuracy = None
    if labels is not None:
        accuracy = float(np.mean(np.argmax(got[name], -1) == labels))
    return accuracy, float(np.mean(same))


def artifact_row(
    artifact,
    model=None,
    num_examples=200,
    repeats=20,
    runtime=None,
    labelled=None,
    record=None,
    timed=True,
):
    """Measures one artifact against the Keras model; returns a table row.

    Args:
        artifact: a SavedModel or OpenVINO IR directory, `.tflite` or `.onnx`
            file written by `kbert.export`.
        model: the Keras model, or its preset directory / `.keras` file;
            default: the source the artifact's export record names.
        num_examples: examples measured: the first of `labelled`, or held-out
            reviews (`verification_inputs`).
        repeats: timed batch-1 calls for the latency.
        runtime: one of `artifact_runtimes(artifact)`; default the first:
            for an ONNX file `"onnxruntime"`, else `"openvino"` (OpenVINO
            at the precision it picks for this CPU) or `"openvino_f32"`.
        labelled: `(texts, label values)` to measure accuracy on (see
            `evaluation_data`); without it, accuracy is `None`.
        record: its export record, its bytes checked already
            (`kbert.export.record.checked_record`); default: read and
            checked here, before anything is loaded.
        timed: time it now (alone); `False` keeps its timers in the row for
            `time_rows`, which times the rows of one table interleaved.

    Returns:
        A dict with the `COLUMNS` keys (`None` where not applicable), and
        `max_abs_diff` (per output), `examples` and `bound` (its export's,
        for `gate`).

    Example:
    >>> row = artifact_row(onnx_file, classifier, num_examples=20, repeats=2)
    >>> row["format"], row["max |diff|"] < 1e-4
    ('onnx', True)
    """
    artifact = os.fspath(artifact)
    if record is None:
        record, _ = records.checked_record(artifact)
    kind = records.artifact_format(artifact)
    runtime = runtime or artifact_runtimes(artifact)[0]
    if runtime not in artifact_runtimes(artifact, installed=False):
        raise ValueError(
            f"A {kind} artifact runs on {artifact_runtimes(artifact, installed=False)}; "
            f"got runtime={runtime!r}."
        )
    model = _model(model, record)
    if model.preprocessor is None:
        raise ValueError("kbert verify runs real text: the model needs a preprocessor.")
    spec = export_spec(model, record.get("text_pairs"))
    texts, features, labels = by_length(
        *evaluation_data(model, spec, num_examples, labelled)
    )
    measure = load(exporter_named(kind).measure)
    try:
        measured = measure(artifact, record, model, spec, texts, features, repeats, runtime)
    except Exception as error:  # each runtime raises its own types
        raise ValueError(
            f"{artifact}: {kind} on {runtime} could not load or run it "
            f"({records.one_line(error)}); re-export it."
        ) from error
    try:
        row = _row(artifact, model, spec, labels, measured)
    except BaseException:
        if measured.get("close") is not None:
            measured["close"]()
        raise
    if "one" in measured:
        row["timers"] = {k: measured.get(k) for k in ("one", "many", "close")}
        return time_rows([row], repeats)[0] if timed else row
    # Timed where it ran (a process of its own).
    row["latency ms"] = measured["seconds"] * 1e3
    row["texts/s"] = row["examples"] / measured["batch_seconds"]
    return row


def _row(artifact, model, spec, labels, measured):
    """The table row of `measure`'s result, without its timings."""
    got, used = measured["outputs"], measured["features"]
    want = keras_outputs(model, used)
    diffs = {k: float(np.max(np.abs(got[k] - want[k]))) for k in want if k in got}
    accuracy, agreement = _quality(spec, got, want, labels)
    examples = len(np.asarray(used["token_ids"]))
    row = {
        "artifact": _artifact_name(artifact),
        "format": measured["format"],
        "size MB": artifact_size(artifact) / 1e6,
        "runtime": measured["runtime"],
        "max |diff|": max(diffs.values()),
        "accuracy": accuracy,
        "agreement": agreement,
        "examples": examples,
        "max_abs_diff": diffs,
        "bound": _own_bound(measured.get("bound") or {}, want, diffs),
    }
    if measured.get("tokenizer"):
        # Artifacts that tokenize on their own: how they read accented/mobile text.
        row["tokenizer"] = measured["tokenizer"]
    return row


def _own_bound(bound, want, diffs):
    """The bound of the exporter (`measure`'s `bound`), per output as absolute
    max |diff| (`kbert.export.checks.allowed_diff`), with the words saying so."""
    tolerance, relative = bound.get("tolerance"), bound.get("relative", False)
    max_diff = None
    if tolerance is not None:
        max_diff = {k: allowed_diff(want[k], tolerance, relative) for k in diffs}
    scale = "max |Keras|" if relative else "max(1, max |Keras|)"
    return {
        "max_diff": max_diff,
        "max_diff_why": f"its export's bound {tolerance:g} x {scale}" if max_diff else None,
        "min_agreement": bound.get("min_agreement"),
    }


def gate(rows, max_diff=None, min_agreement=None):
    """The rows, each artifact row checked against its bounds: `max_diff`
    (every output's max |artifact - Keras|) and `min_agreement`, each by
    default the artifact's own (the bound its exporter verified it with:
    float32 within its tolerance x max(1, max |Keras|); quantized, or run at a
    lower precision such as OpenVINO's bf16, by agreement >= the export's
    `min_agreement`). Adds `max_diff_bound` (per output), `min_agreement`,
    `misses` (why, in words) and `passed`; the Keras row is the reference.

    Example:
    >>> rows = [artifact_row(onnx_file, classifier, 8, 2)]
    >>> gate(rows)[0]["passed"], gate(rows, max_diff=-1.0)[0]["misses"]
    (True, ["output 'logits' differs from Keras by ... > -1 (--max-diff)", ...])
    """
    checked = []
    for row in rows:
        row = dict(row)
        checked.append(row)
        if "bound" not in row:  # the Keras row
            continue
        own = row["bound"]
        bounds, why = own["max_diff"], own["max_diff_why"]
        if max_diff is not None:
            bounds, why = {k: max_diff for k in row["max_abs_diff"]}, "--max-diff"
        minimum, agreement_why = own["min_agreement"], "its export's min_agreement"
        if min_agreement is not None:
            minimum, agreement_why = min_agreement, "--min-agreement"
        misses = [
            f"output {k!r} differs from Keras by {diff:.3g} > {bounds[k]:.3g} ({why})"
            for k, diff in row["max_abs_diff"].items()
            if bounds is not None and not diff <= bounds[k]
        ]
        agreement = row["agreement"]
        if minimum is not None and agreement is not None and not agreement >= minimum:
            misses.append(
                f"agreement with Keras {agreement:.4f} on {row['examples']} examples "
                f"< {minimum:g} ({agreement_why})"
            )
        row.update(
            max_diff_bound=bounds, min_agreement=minimum, misses=misses, passed=not misses
        )
    return checked


def fastest_row(rows, rank="latency"):
    """The artifact row of `gate` that holds its bounds and is fastest on this
    machine, or `None` when no row holds them: by the lowest batch-1 latency
    (`rank="latency"`) or the most texts per second in batches
    (`"throughput"`).

    Example:
    >>> rows = [
    ...     {"format": "keras", "latency ms": 9.0, "texts/s": 50.0},
    ...     {"artifact": "a.onnx", "passed": True, "latency ms": 4.0, "texts/s": 80.0},
    ...     {"artifact": "a.onnx", "passed": False, "latency ms": 1.0, "texts/s": 900.0},
    ...     {"artifact": "b", "passed": True, "latency ms": 5.0, "texts/s": 120.0},
    ... ]
    >>> fastest_row(rows)["latency ms"], fastest_row(rows, "throughput")["artifact"]
    (4.0, 'b')
    """
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {RANKS}; got {rank!r}.")
    passed = [row for row in rows if row.get("passed") and "artifact" in row]
    if rank == "throughput":
        return max(passed, key=lambda row: row["texts/s"], default=None)
    return min(passed, key=lambda row: row["latency ms"], default=None)


def json_rows(rows, rank="latency"):
    """The rows of `gate` for `kbert verify --json`: plain keys, the bounds,
    whether each row holds them and which is fastest by `rank`.

    Example:
    >>> row = json_rows(gate([artifact_row(onnx_file, classifier, 8, 2)]))[0]
    >>> row["runtime"], row["passed"], sorted(row["max_diff_bound"])
    ('onnxruntime (CPU)', True, ['logits', 'probabilities'])
    """
    keys = {
        "artifact": "artifact",
        "format": "format",
        "runtime": "runtime",
        "size MB": "size_mb",
        "max |diff|": "max_diff",
        "max_abs_diff": "max_abs_diff",
        "max_diff_bound": "max_diff_bound",
        "agreement": "agreement",
        "min_agreement": "min_agreement",
        "accuracy": "accuracy",
        "examples": "examples",
        "latency ms": "latency_ms",
        "texts/s": "texts_per_second",
        "tokenizer": "tokenizer",
    }
    fastest = fastest_row(rows, rank)
    return [
        {
            **{name: row[key] for key, name in keys.items() if key in row},
            # The Keras row is the reference: it holds by definition.
            "passed": row.get("passed", True),
            "misses": row.get("misses", []),
            "fastest": row is fastest,
        }
        for row in rows
    ]


def keras_row(
    model, num_examples=200, repeats=20, text_pairs=None, labelled=None, timed=True
):
    """The float32 Keras baseline row of the `kbert verify` table (`timed`:
    as `artifact_row`'s).

    Example:
    >>> keras_row(classifier, num_examples=20, repeats=2)["format"]
    'keras'
    """
    spec = export_spec(model, text_pairs)
    _, features, labels = evaluation_data(model, spec, num_examples, labelled)
    # As users run the Keras model: length-bucketed batches (the artifacts
    # take the fixed-length inputs their signatures declare).
    want = model.export_outputs(model.predict_features(features))
    want = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in want.items()}
    accuracy, _ = _quality(spec, want, want, labels)
    # Batch-1 latency as users get it: `predict`'s compiled function (an
    # eager call of the model is several times slower on TensorFlow).
    one = first_row(features)
    size = sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in model.weights)
    row = {
        "artifact": type(model).__name__,
        "format": "keras",
        "size MB": size / 1e6,
        "runtime": f"keras {keras.version()} ({keras.backend.backend()})",
        "max |diff|": 0.0,
        "accuracy": accuracy,
        "agreement": 1.0,
        "examples": len(features["token_ids"]),
        "timers": {
            "one": lambda: model.predict_features(one),
            "many": lambda: model.predict_features(features, batch_size=BATCH_SIZE),
        },
    }
    return time_rows([row], repeats)[0] if timed else row


def measurement_table(rows):
    """The rows as a Markdown table (what `kbert verify` prints).

    Example:
    >>> rows = [keras_row(classifier, 20, 2), artifact_row(onnx_file, classifier, 20, 2)]
    >>> print(measurement_table(rows))  # doctest: +ELLIPSIS
    | artifact ...
    """

    def cell(key, value):
        if value is None:
            return "n/a"
        if key == "max |diff|":
            return f"{value:.2e}"
        if key in ("accuracy", "agreement"):
            return f"{value:.3f}"
        if key in ("size MB", "latency ms"):
            return f"{value:.2f}"
        if key == "texts/s":
            return f"{value:.1f}"
        return str(value)

    columns = COLUMNS
    if any("passed" in row for row in rows):  # checked by `gate`
        columns += ("bounds",)
        rows = [{**row, "bounds": _verdict(row)} for row in rows]
    table = markdown_table(
        columns, [[cell(k, row.get(k)) for k in columns] for row in rows]
    )
    # Artifacts that tokenize on their own: how they read accented/mobile text.
    notes = [
        f"{row['artifact']} ({row['runtime']}) tokenizer: {row['tokenizer']}"
        for row in rows
        if row.get("tokenizer")
    ]
    return "\n".join([table, *notes])


def _verdict(row):
    """The `bounds` cell: `ok`, `MISS`, or `reference` (the Keras row)."""
    if "passed" not in row:
        return "reference"
    return "ok" if row["passed"] else "MISS"


def median_seconds(function, repeats=5, warmup=1):
    """Median wall-clock seconds of `function()` over `repeats` calls.

    Example:
    >>> median_seconds(lambda: sum(range(1000)), repeats=3) > 0
    True
    """
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
