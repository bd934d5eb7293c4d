"""`kbert verify` is a gate: each row holds its bounds (by default its
exporter's own), exit status 1 when one misses them, `--json` for CI."""

import json

import pytest

from kbert.cli import main
from kbert.export.formats import DEFAULT_MIN_AGREEMENT
from kbert.export.openvino.runner import OpenVinoRunner
from kbert.utils.cpu import cpu_name
from tests.export.export_helpers import tiny_model

QUICK = ["--num-examples", "8", "--repeats", "1"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """`(artifact, its source, another model)`: a float32 ONNX classifier."""
    directory = tmp_path_factory.mktemp("gate")
    source = str(directory / "classifier.keras")
    tiny_model(num_classes=2).save(source)
    other = str(directory / "other.keras")
    tiny_model(num_classes=2, seed=1).save(other)
    artifact = str(directory / "classifier.onnx")
    assert main(["export", source, "--format", "onnx", "-o", artifact]) == 0
    return artifact, source, other


def test_a_verified_artifact_passes_its_own_bounds(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("| classifier.onnx")]
    assert lines and all(line.split("|")[-2].strip() == "ok" for line in lines)
    assert f"All {len(lines)} artifact rows hold their bounds." in out


def test_a_row_past_max_diff_fails_the_gate(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK, "--max-diff", "0"]) == 1
    out = capsys.readouterr().out
    assert "classifier.onnx (onnxruntime (CPU)) misses its bounds: output 'logits'" in out
    assert "> 0 (--max-diff)" in out
    assert "hold their bounds" not in out


def test_an_artifact_of_another_model_fails_its_exporters_bound(exported, capsys):
    artifact, _, other = exported
    assert main(["verify", artifact, "--model", other, *QUICK]) == 1
    out = capsys.readouterr().out
    assert "(its export's bound 0.0001 x max(1, max |Keras|))" in out


def test_json_lists_the_rows_with_their_bounds(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK, "--json"]) == 0
    captured = capsys.readouterr()
    keras, onnxruntime, *openvino = json.loads(captured.out)  # stdout: the JSON alone
    assert "hold their bounds" in captured.err
    assert keras["format"] == "keras" and keras["passed"] and keras["misses"] == []
    assert onnxruntime["runtime"] == "onnxruntime (CPU)" and onnxruntime["passed"]
    assert onnxruntime["min_agreement"] is None  # float32: bounded by max |diff|
    for output, diff in onnxruntime["max_abs_diff"].items():
        assert diff <= onnxruntime["max_diff_bound"][output]
        assert onnxruntime["max_diff_bound"][output] >= 1e-4
    default, forced = openvino
    assert forced["runtime"].endswith("forced") and forced["max_diff_bound"]
    if OpenVinoRunner(artifact).precision == "f32":
        assert default["max_diff_bound"] and default["min_agreement"] is None
    else:  # bf16 on this CPU: bounded by agreement, as its exporter does
        assert default["max_diff_bound"] is None
        assert default["min_agreement"] == DEFAULT_MIN_AGREEMENT


def test_json_names_the_rows_below_min_agreement(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK, "--json", "--min-agreement", "1.01"]) == 1
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert [row["passed"] for row in rows] == [True] + [False] * (len(rows) - 1)
    assert rows[1]["misses"] == [
        "agreement with Keras 1.0000 on 8 examples < 1.01 (--min-agreement)"
    ]
    assert "classifier.onnx (onnxruntime (CPU)) misses its bounds" in captured.err


def test_the_fastest_row_within_its_bounds_is_named(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK, "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    artifact_rows = [row for row in rows if row["format"] != "keras"]
    fastest = min(artifact_rows, key=lambda row: row["latency_ms"])
    assert [row["fastest"] for row in rows] == [row is fastest for row in rows]
    assert (
        f"Fastest within its bounds on this CPU ({cpu_name()}): classifier.onnx "
        f"on {fastest['runtime']}, {fastest['latency_ms']:.2f} ms batch-1 latency"
    ) in captured.err
    # No row holds --max-diff 0: none is named.
    assert main(["verify", artifact, *QUICK, "--max-diff", "0"]) == 1
    assert "Fastest" not in capsys.readouterr().out


def test_rank_throughput_names_the_row_with_the_most_texts_per_second(exported, capsys):
    artifact, _, _ = exported
    assert main(["verify", artifact, *QUICK, "--json", "--rank", "throughput"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert all(row["texts_per_second"] > 0 for row in rows)
    keras = rows[0]
    fastest = max(rows[1:], key=lambda row: row["texts_per_second"])
    assert [row["fastest"] for row in rows] == [row is fastest for row in rows]
    ratio = fastest["texts_per_second"] / keras["texts_per_second"]
    assert (
        f"classifier.onnx on {fastest['runtime']}, {fastest['texts_per_second']:.1f} "
        f"texts/s in batches of 32 ({ratio:.1f}x Keras'"
    ) in captured.err
    with pytest.raises(SystemExit):  # argparse: not one of the ranks
        main(["verify", artifact, *QUICK, "--rank", "fastest"])
