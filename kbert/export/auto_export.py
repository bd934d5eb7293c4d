"""`kbert export --format auto`: the fastest artifact that holds its bounds here.

Which artifact runs fastest depends on the CPU (measured in
export/README.md: OpenVINO's bf16 IR on an Intel Xeon with AMX, its NNCF
int8 IR on AMD EPYC Zen 4 and Zen 5).
`auto` measures instead of guessing. It exports each candidate of
`CANDIDATES` whose runtime is installed (each verified by its own exporter;
a quantized one that loses agreement is refused and left out), measures
every artifact on every runtime it runs on exactly as `kbert verify` does
(`artifact_row`, `gate`: max |diff| and agreement within the exporter's own
bounds, batch-1 latency and texts/s in batches), and writes the fastest
row's artifact (`rank`: by latency, for a service answering one request at
a time, or by throughput, for batch jobs) to the target directory with
`ranking.json`: this CPU, every row and the refusals.

The target directory then holds `model.onnx` (run it on the runtime
`ranking.json` names) or an OpenVINO IR (`openvino_model.xml`), and `kbert
verify` reads it as any other artifact.
"""

import importlib.util
import json
import os
import shutil

from kbert.export.checks import ExportVerificationError
from kbert.export.formats import (
    AGREEMENT_TEXTS,
    exporter_named,
    load,
)
from kbert.export.measurements import (
    artifact_row,
    artifact_runtimes,
    fastest_row,
    gate,
    json_rows,
    keras_row,
    time_rows,
)
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory
from kbert.utils.cpu import cpu_name
from kbert.utils.owned_temps import work_directory

# (candidate name, format, its export options): the server-CPU runtimes
# (onnxruntime, OpenVINO); an ONNX file is also measured on OpenVINO.
CANDIDATES = (
    ("float32.onnx", "onnx", {}),
    ("dynamic_int8.onnx", "onnx", {"quantization": "dynamic_int8"}),
    ("openvino", "openvino", {}),
    ("openvino_int8", "openvino", {"quantization": "int8"}),
)
RUNTIME_MODULES = {"onnx": "onnxruntime", "openvino": "openvino"}
RANKING = "ranking.json"
REPEATS = 20  # timed batch-1 calls per row, as `kbert verify`'s default


def auto(
    model,
    path,
    source=None,
    overwrite=False,
    min_agreement=None,
    num_examples=None,
    repeats=None,
    rank="latency",
):
    """Exports `model` as the candidate that runs fastest on this CPU within
    its bounds; writes it and `ranking.json` to the directory `path`.

    Args:
        model: a kbert task model or backbone with its preprocessor.
        path: the directory to write (replaced only when a candidate holds).
        source: where the model came from, kept in the export records.
        overwrite: write over a `path` holding files kbert did not write.
        min_agreement: the least share of predictions a quantized or bf16
            candidate must share with Keras (its exporter's check and the
            ranking's gate; None: 0.99, or a mean cosine of 0.999 for
            embeddings).
        num_examples: held-out reviews each row is measured on (default
            the 500 the exporters check agreement on).
        repeats: timed batch-1 calls per row (default 20).
        rank: `"latency"` (the lowest batch-1 latency) or `"throughput"`
            (the most texts per second in batches of 32; on OpenVINO, one
            request in flight per stream: run it so, `OpenVinoRunner(...,
            throughput=True).map`).

    Returns:
        The ranking (also in `ranking.json`): `cpu`, `rank`, `chosen`
        (`artifact`, `format`, `file`, `runtime`, `latency_ms`,
        `texts_per_second`, `speedup_vs_keras` by `rank`),
        `rows` (as `kbert verify --json`) and `refused` (candidates whose
        export failed its verification, with the reason).

    Raises:
        ExportVerificationError: no candidate holds its bounds (nothing is
            written).

    Example:
    >>> ranking = auto(classifier, "out/deploy", num_examples=8, repeats=2)
    >>> ranking["chosen"]["file"] in os.listdir("out/deploy")
    True
    >>> chosen = [row for row in ranking["rows"] if row["fastest"]]
    >>> chosen[0]["passed"], len(ranking["rows"]) > 2
    (True, True)
    """
    check_target(path, "auto", overwrite)
    fastest_row([], rank)  # an unknown rank is refused before any work
    num_examples = num_examples or AGREEMENT_TEXTS
    repeats = repeats or REPEATS
    candidates = [
        candidate
        for candidate in CANDIDATES
        if importlib.util.find_spec(RUNTIME_MODULES[candidate[1]]) is not None
    ]
    if not candidates:
        raise ImportError(
            "kbert export --format auto ranks onnxruntime and OpenVINO artifacts: "
            "install onnxruntime or openvino (pip install onnxruntime openvino)."
        )
    rows = [keras_row(model, num_examples, repeats, timed=False)]
    refused = []
    with work_directory("auto") as work:
        artifacts = {}
        for name, kind, options in candidates:
            artifact = os.path.join(work, name)
            try:
                load(exporter_named(kind).export)(
                    model, artifact, source=source, min_agreement=min_agreement, **options
                )
            except ExportVerificationError as error:
                refused.append({"artifact": name, "format": kind, "reason": str(error)})
                continue
            artifacts[name] = kind
            for runtime in artifact_runtimes(artifact):
                rows.append(
                    artifact_row(
                        artifact, model, num_examples, repeats, runtime, timed=False
                    )
                )
        rows = gate(time_rows(rows, repeats))
        fastest = fastest_row(rows, rank)
        if fastest is None:
            raise ExportVerificationError(
                f"kbert export --format auto: no candidate holds its bounds on this CPU "
                f"({cpu_name()}); nothing was written at {path}. Refused: {refused}; "
                "measured: "
                + "; ".join(
                    f"{r['artifact']} ({r['runtime']}): {r['misses']}" for r in rows[1:]
                )
            )
        kind = artifacts[fastest["artifact"]]
        keras = rows[0]
        speedup = keras["latency ms"] / fastest["latency ms"]
        if rank == "throughput":
            speedup = fastest["texts/s"] / keras["texts/s"]
        ranking = {
            "cpu": cpu_name(),
            "rank": rank,
            "chosen": {
                "artifact": fastest["artifact"],
                "format": kind,
                "file": "model.onnx" if kind == "onnx" else exporter_named(kind).marker,
                "runtime": fastest["runtime"],
                "latency_ms": fastest["latency ms"],
                "texts_per_second": fastest["texts/s"],
                "speedup_vs_keras": speedup,
            },
            "rows": json_rows(rows, rank),
            "refused": refused,
        }
        with atomic_directory(path) as tmp:
            chosen = os.path.join(work, fastest["artifact"])
            if kind == "onnx":
                shutil.copy2(chosen, os.path.join(tmp, "model.onnx"))
            else:
                shutil.copytree(chosen, tmp, dirs_exist_ok=True)
            with open(os.path.join(tmp, RANKING), "w", encoding="utf-8") as file:
                json.dump(ranking, file, indent=2)
    return ranking
