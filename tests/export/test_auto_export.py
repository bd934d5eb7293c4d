"""`kbert export --format auto` / `kbert.export.auto`: the fastest artifact
that holds its bounds on this CPU, chosen by measuring, on every backend."""

import argparse
import json
import os

import numpy as np
import pytest

from kbert.export import ExportVerificationError, agreement, auto, auto_export, measurements
from kbert.export.commands import add_export_command
from kbert.export.measurements import artifact_row, artifact_runtimes
from kbert.export.record import artifact_format, read_record
from kbert.utils import cpu
from tests.export.export_helpers import tiny_model

EXAMPLES = 16  # held-out reviews per measured row (the exporters check their own 500)


@pytest.fixture(scope="module")
def model():
    return tiny_model(num_classes=2)


@pytest.fixture(autouse=True, scope="module")
def fewer_agreement_texts():
    """The int8 exporter checks agreement on 64 reviews, not 500 (its own
    tests measure the full check)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agreement, "AGREEMENT_TEXTS", 64)
        yield


@pytest.fixture(scope="module")
def deployed(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("auto") / "deploy"
    return path, auto(model, path, num_examples=EXAMPLES, repeats=3)


def test_the_fastest_row_within_bounds_is_written(model, deployed):
    path, ranking = deployed
    rows = ranking["rows"]
    assert rows[0]["format"] == "keras"
    measured = rows[1:]
    # Every candidate, on every runtime it runs on (ONNX files on onnxruntime
    # and OpenVINO, the IR on OpenVINO), unless its own exporter refused it
    # (int8 of this random tiny model loses agreement on some CPUs).
    refused = {r["artifact"] for r in ranking["refused"]}
    artifacts = [row["artifact"] for row in measured]
    candidates = {"float32.onnx", "dynamic_int8.onnx", "openvino", "openvino_int8"}
    assert set(artifacts) | refused == candidates
    assert not refused & set(artifacts) and "float32.onnx" not in refused
    for name in set(artifacts):
        assert artifacts.count(name) == (3 if name.endswith(".onnx") else 2), name
    passed = [row for row in measured if row["passed"]]
    fastest = min(passed, key=lambda row: row["latency_ms"])
    assert [row for row in rows if row["fastest"]] == [fastest]
    chosen = ranking["chosen"]
    assert (chosen["artifact"], chosen["runtime"]) == (
        fastest["artifact"],
        fastest["runtime"],
    )
    assert chosen["latency_ms"] == fastest["latency_ms"]
    assert chosen["texts_per_second"] == fastest["texts_per_second"]
    assert chosen["speedup_vs_keras"] == rows[0]["latency_ms"] / fastest["latency_ms"]
    assert (ranking["rank"], ranking["cpu"]) == ("latency", cpu.cpu_name())

    # The directory holds the winner and the ranking, nothing else.
    kind = "onnx" if fastest["artifact"].endswith(".onnx") else "openvino"
    assert chosen["format"] == kind
    expected = (
        {"model.onnx"} if kind == "onnx" else set(os.listdir(path)) - {"ranking.json"}
    )
    assert set(os.listdir(path)) == expected | {"ranking.json"}
    assert json.loads((path / "ranking.json").read_text()) == ranking

    # The written artifact is the one measured: its record says which, and
    # measured again on the runtime it won on, it gives the row's agreement
    # and max |diff| (within its own bounds: `passed`).
    artifact = path / chosen["file"] if kind == "onnx" else path
    assert artifact_format(str(artifact)) == kind
    quantization = {"dynamic_int8.onnx": "dynamic_int8", "openvino_int8": "int8"}
    record = read_record(str(artifact))
    assert record.get("quantization") == quantization.get(chosen["artifact"])
    again = [
        row
        for runtime in artifact_runtimes(str(artifact))
        for row in [artifact_row(str(artifact), model, EXAMPLES, 1, runtime)]
        if row["runtime"] == chosen["runtime"]
    ]
    assert len(again) == 1, chosen["runtime"]
    assert again[0]["agreement"] == fastest["agreement"]
    np.testing.assert_allclose(
        again[0]["max |diff|"], fastest["max_diff"], rtol=1e-5, atol=1e-6
    )


# What auto does with the rows does not depend on the backend: checked once
# (the candidates per backend: the first test).
@pytest.mark.backend_independent
def test_a_candidate_its_exporter_refuses_is_left_out(model, tmp_path, monkeypatch):
    # No quantized artifact agrees on more than 100% of the reviews; float32 holds.
    monkeypatch.setattr(auto_export, "CANDIDATES", auto_export.CANDIDATES[:2])
    ranking = auto(
        model, tmp_path / "deploy", min_agreement=1.01, num_examples=8, repeats=2
    )
    refused = {r["artifact"]: r["reason"] for r in ranking["refused"]}
    assert "dynamic_int8.onnx" in refused and "float32.onnx" not in refused
    assert all("agreement" in reason for reason in refused.values())
    assert not set(refused) & {row["artifact"] for row in ranking["rows"]}
    assert ranking["chosen"]["artifact"] not in refused


@pytest.mark.backend_independent
def test_rank_throughput_writes_the_row_with_the_most_texts_per_second(
    model, tmp_path, monkeypatch
):
    monkeypatch.setattr(auto_export, "CANDIDATES", auto_export.CANDIDATES[:1])
    with pytest.raises(ValueError, match="rank must be one of"):
        auto(model, tmp_path / "never", rank="fastest")
    assert os.listdir(tmp_path) == []
    ranking = auto(
        model, tmp_path / "deploy", num_examples=40, repeats=2, rank="throughput"
    )
    keras, *rows = ranking["rows"]
    fastest = max(rows, key=lambda row: row["texts_per_second"])
    assert [row for row in rows if row["fastest"]] == [fastest]
    chosen = ranking["chosen"]
    assert (ranking["rank"], chosen["runtime"]) == ("throughput", fastest["runtime"])
    ratio = fastest["texts_per_second"] / keras["texts_per_second"]
    assert chosen["speedup_vs_keras"] == ratio


@pytest.mark.backend_independent
def test_nothing_is_written_when_no_candidate_holds(model, tmp_path, monkeypatch):
    # Every row misses a bound no output can hold.
    monkeypatch.setattr(auto_export, "CANDIDATES", auto_export.CANDIDATES[:1])
    monkeypatch.setattr(
        auto_export, "gate", lambda rows: measurements.gate(rows, max_diff=-1.0)
    )
    target = tmp_path / "deploy"
    with pytest.raises(ExportVerificationError, match="no candidate holds its bounds"):
        auto(model, target, num_examples=8, repeats=2)
    assert os.listdir(tmp_path) == []


def _export(argv):
    parser = argparse.ArgumentParser(prog="kbert")
    add_export_command(parser.add_subparsers())
    args = parser.parse_args(["export", *argv])
    return args.handler(args)


@pytest.mark.backend_independent
def test_the_command_prints_the_ranking_and_refuses_what_does_not_apply(
    model, tmp_path, capsys, monkeypatch
):
    source = tmp_path / "preset"
    model.save_to_preset(source)
    target = tmp_path / "deploy"
    # A format flag auto chooses itself: refused by name before any work.
    with pytest.raises(ValueError, match="--opset does not apply to --format auto"):
        _export([str(source), "--format", "auto", "--opset", "17", "-o", str(target)])
    # A directory with the user's files: refused, kept.
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt"):
        _export([str(source), "--format", "auto", "-o", str(target)])
    assert os.listdir(target) == ["notes.txt"]

    monkeypatch.setattr(auto_export, "AGREEMENT_TEXTS", EXAMPLES)
    monkeypatch.setattr(auto_export, "REPEATS", 2)
    argv = [str(source), "--format", "auto", "-o", str(target), "--overwrite"]
    assert _export(argv) == 0
    out = capsys.readouterr().out
    ranking = json.loads((target / "ranking.json").read_text())
    chosen = ranking["chosen"]
    assert f"Wrote {target / chosen['file']}" in out
    assert "(fastest)" in out and "reference" in out
    assert "notes.txt" not in os.listdir(target)

    # kbert's own auto export there now: the same command without the flag
    # replaces it whole (one candidate, to keep the rerun cheap).
    monkeypatch.setattr(auto_export, "CANDIDATES", auto_export.CANDIDATES[:1])
    first = target.stat().st_ino
    assert _export(argv[:-1]) == 0
    assert target.stat().st_ino != first
    assert json.loads((target / "ranking.json").read_text())["chosen"]["file"]
