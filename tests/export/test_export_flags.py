"""`kbert export`: every flag takes effect or is refused, for every (format,
flag) pair of the table of exporters, before any model is loaded."""

import argparse
import dataclasses
import inspect

import pytest

from kbert.cli import main
from kbert.export import commands
from kbert.export.commands import FLAGS, add_export_command, check_flags
from kbert.export.formats import EXPORTERS, exporter_named, load
from kbert.presets import model_source

ROWS = {exporter.name: exporter for exporter in EXPORTERS}
# A value each flag could take on the command line, and what the exporter
# then gets (None: a switch).
VALUES = {
    "flavour": ("string", "string"),
    "quantization": ("dynamic_int8", "dynamic_int8"),
    "min_agreement": ("0.9", 0.9),
    "sequence_length": ("32", 32),
    "batch_size": ("dynamic", None),
    "text_pairs": (None, True),
    "tolerance": ("0.001", 0.001),
    "opset": ("17", 17),
}
TAKEN = [(name, flag) for name, row in ROWS.items() for flag in row.options]
REFUSED = [
    (name, flag) for name, row in ROWS.items() for flag in FLAGS if flag not in row.options
]


def _values(name, flag):
    """`VALUES[flag]`, or for `quantization` the first the format offers (if
    it offers one)."""
    if flag == "quantization" and len(ROWS[name].quantizations) > 1:
        return (ROWS[name].quantizations[1],) * 2
    return VALUES[flag]


def _command(name, flag, output, model="no/such/model"):
    command = ["export", model, "--format", name, "-o", str(output)]
    command.append("--" + flag.replace("_", "-"))
    if _values(name, flag)[0] is not None:
        command.append(_values(name, flag)[0])
    if flag in ROWS[name].quantized_options:
        command += ["--quantization", ROWS[name].quantizations[1]]
    return command


def _parse(command):
    parser = argparse.ArgumentParser(prog="kbert")
    add_export_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(command)


@pytest.fixture
def no_model_loads(monkeypatch):
    def load_model(path):
        raise AssertionError(f"a model was loaded ({path})")

    monkeypatch.setattr(model_source, "load_model", load_model)


def test_every_flag_has_a_value_here():
    assert set(VALUES) == set(FLAGS)
    assert REFUSED and TAKEN


@pytest.mark.parametrize(("name", "flag"), REFUSED)
def test_a_flag_the_format_does_not_take_is_refused(name, flag, tmp_path, no_model_loads):
    output = tmp_path / "artifact"
    args = _parse(_command(name, flag, output))
    formats = ", ".join(e.name for e in EXPORTERS if flag in e.options)
    option = "--" + flag.replace("_", "-")
    message = (
        f"{option} does not apply to --format {name}: it is a flag of --format {formats}."
    )
    with pytest.raises(ValueError) as error:
        args.handler(args)
    assert message in str(error.value)
    assert "Nothing was loaded or written." in str(error.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("name", "flag"), TAKEN)
def test_a_flag_the_format_takes_reaches_its_exporter(name, flag, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(model_source, "load_model", lambda path: "the model")
    monkeypatch.setattr(commands, "load", lambda path: lambda *a, **kw: calls.append(kw))
    args = _parse(_command(name, flag, tmp_path / "artifact"))
    with pytest.raises(TypeError):  # the fake exporter returns no record
        args.handler(args)
    (options,) = calls
    assert options.pop("source") == "no/such/model"
    assert options.pop("overwrite") is False
    expected = {flag: _values(name, flag)[1]}
    if flag in ROWS[name].quantized_options:
        expected["quantization"] = ROWS[name].quantizations[1]
    assert options == expected  # nothing else: the exporter's own defaults


@pytest.mark.parametrize("name", sorted(ROWS))
def test_flags_left_out_leave_the_exporters_defaults(name, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(model_source, "load_model", lambda path: "the model")
    monkeypatch.setattr(commands, "load", lambda path: lambda *a, **kw: calls.append(kw))
    args = _parse(["export", "m", "--format", name, "-o", str(tmp_path / "a")])
    with pytest.raises(TypeError):
        args.handler(args)
    assert calls == [{"source": "m", "overwrite": False}]


@pytest.mark.parametrize("name", [n for n, row in ROWS.items() if row.quantized_options])
def test_an_option_of_quantized_artifacts_needs_a_quantization(
    name, tmp_path, no_model_loads
):
    command = ["export", "m", "--format", name, "-o", str(tmp_path / "a")]
    args = _parse(command + ["--min-agreement", "0.5"])
    with pytest.raises(ValueError, match=f"--min-agreement applies to a quantized {name}"):
        args.handler(args)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(ROWS))
def test_rank_applies_to_auto_only(name, tmp_path, no_model_loads):
    args = _parse(
        ["export", "m", "--format", name, "-o", str(tmp_path / "a")]
        + ["--rank", "throughput"]
    )
    with pytest.raises(
        ValueError,
        match=f"--rank applies to --format auto only .*"
        f"--format {name} writes one artifact. Nothing was loaded",
    ):
        args.handler(args)
    assert list(tmp_path.iterdir()) == []


def test_a_value_the_format_does_not_offer_is_refused():
    row = dataclasses.replace(
        exporter_named("tflite"), flavours=("token_ids",), quantizations=(None, "float16")
    )
    check_flags(row, {"flavour": "token_ids", "quantization": "float16"})
    with pytest.raises(
        ValueError, match="--flavour string: --format tflite offers token_ids"
    ):
        check_flags(row, {"flavour": "string"})
    with pytest.raises(
        ValueError, match="--quantization int8: --format tflite offers float16"
    ):
        check_flags(row, {"quantization": "int8"})


def test_the_command_line_reports_a_refused_flag(tmp_path, capsys, no_model_loads):
    output = tmp_path / "m.onnx"
    status = main(
        ["export", "m", "--format", "onnx", "--flavour", "mediapipe", "-o", str(output)]
    )
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("kbert export: error: --flavour mediapipe: --format onnx offers")
    assert not output.exists()


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_rows_options_are_its_export_functions_flags(name):
    # A flag in `options` is a keyword of the function; a keyword of the
    # function that is a `kbert export` flag is in `options`.
    parameters = inspect.signature(load(ROWS[name].export)).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    assert set(parameters) & set(FLAGS) == set(ROWS[name].options)


@pytest.mark.parametrize(("name", "flag"), REFUSED)
def test_the_python_api_refuses_a_keyword_that_does_not_apply(name, flag, tmp_path):
    # kbert.export.<name> and model.export(format=...) alike: no **kwargs
    # swallows it.
    row = ROWS[name]
    for function in (load(row.export), load(row.keras_export)):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{flag}'"):
            function(None, str(tmp_path / "artifact"), **{flag: VALUES[flag][1]})
    assert list(tmp_path.iterdir()) == []


def test_mediapipe_refuses_a_batch_size_other_than_one(tmp_path):
    from kbert.export.tflite.exporter import tflite

    with pytest.raises(ValueError, match=r'flavour="mediapipe" has batch size 1.*4'):
        tflite(None, str(tmp_path / "m.tflite"), flavour="mediapipe", batch_size=4)


def test_mediapipe_refuses_text_pairs_its_text_classifier_cannot_feed(tmp_path):
    from kbert.export.tflite.exporter import tflite
    from tests.export.export_helpers import tiny_model

    with pytest.raises(
        ValueError, match=r"TextClassifier takes 1 text\(s\).*2 \(text, text_pair\)"
    ):
        tflite(
            tiny_model(num_classes=2),
            str(tmp_path / "m.tflite"),
            flavour="mediapipe",
            text_pairs=True,
        )
    assert list(tmp_path.iterdir()) == []
