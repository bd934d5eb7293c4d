"""The table of exporters (`kbert.export.formats.EXPORTERS`): every row is
complete, and the command line, the records, `kbert verify`, `kbert.export`
and Keras' `model.export` all read it."""

import argparse
import dataclasses

import pytest

import kbert.export
from kbert.export import formats
from kbert.export.commands import add_export_command
from kbert.export.measurements import artifact_runtimes
from kbert.export.record import artifact_format

ROWS = {exporter.name: exporter for exporter in formats.EXPORTERS}


@pytest.mark.parametrize("name", formats.NAMES)
def test_every_row_is_complete(name):
    formats.check_exporter(ROWS[name])


# Every field a row uses (not None there), left out: the check names it.
USED_FIELDS = [
    (name, field.name)
    for name, row in ROWS.items()
    for field in dataclasses.fields(formats.Exporter)
    if getattr(row, field.name) is not None
]


@pytest.mark.parametrize(("name", "field"), USED_FIELDS)
def test_a_row_missing_a_field_fails(name, field):
    broken = dataclasses.replace(ROWS[name], **{field: None})
    with pytest.raises(ValueError, match=field):
        formats.check_exporter(broken)


@pytest.mark.parametrize("field", ["export", "runner", "measure", "keras_export"])
def test_a_row_naming_what_is_not_callable_fails(field):
    broken = dataclasses.replace(ROWS["onnx"], **{field: "kbert.export.formats:NAMES"})
    with pytest.raises(ValueError, match=f"{field}: .* is not callable"):
        formats.check_exporter(broken)
    missing = dataclasses.replace(ROWS["onnx"], **{field: "kbert.export.formats:nothing"})
    with pytest.raises(ValueError, match=f"{field}: .* does not load"):
        formats.check_exporter(missing)


def test_names_are_unique():
    assert len(set(formats.NAMES)) == len(formats.EXPORTERS)
    keras_names = [exporter.keras_name for exporter in formats.EXPORTERS]
    assert len(set(keras_names)) == len(keras_names)


@pytest.mark.parametrize("name", formats.NAMES)
def test_the_public_function_is_the_rows_export(name):
    assert getattr(kbert.export, name) is formats.load(ROWS[name].export)
    assert name in kbert.export.__all__


def test_kbert_export_takes_every_rows_choices():
    parser = argparse.ArgumentParser(prog="kbert")
    add_export_command(parser.add_subparsers())
    export = parser._subparsers._group_actions[0].choices["export"]
    flags = {action.dest: action for action in export._actions}
    assert tuple(flags["format"].choices) == (*formats.NAMES, "auto")  # auto: the fastest
    for exporter in formats.EXPORTERS:
        assert set(exporter.options) <= set(flags), exporter.name
        assert set(exporter.flavours) <= set(flags["flavour"].choices)
        assert set(exporter.quantizations) - {None} <= set(flags["quantization"].choices)


def test_keras_export_formats_are_the_rows():
    import kbert.export.keras_formats  # noqa: F401 - registers them
    from kbert.models import keras_export

    assert sorted(keras_export._exporters) == sorted(
        exporter.keras_name for exporter in formats.EXPORTERS
    )


@pytest.mark.parametrize("name", formats.NAMES)
def test_an_artifact_is_recognised_by_its_row(name, tmp_path):
    exporter = ROWS[name]
    if exporter.suffix:
        path = tmp_path / f"model{exporter.suffix}"
    else:
        path = tmp_path / "model"
        path.mkdir()
        (path / exporter.marker).write_bytes(b"")
    assert artifact_format(path) == name
    assert artifact_runtimes(path, installed=False) == exporter.runtimes
