"""The suite's schedule (tests/file_order.py): longest files first, tests in
their order within a file, unknown files last; every file named in the table
exists."""

import json
import os
import types

import keras
import pytest

from tests import file_order

pytestmark = pytest.mark.backend_independent


def _items(*nodeids):
    return [types.SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_longest_file_first_and_unknown_files_keep_their_place(monkeypatch, tmp_path):
    table = tmp_path / "file_seconds.json"
    table.write_text(json.dumps({keras.backend.backend(): {"b.py": 3.0, "c.py": 9.0}}))
    monkeypatch.setattr(file_order, "TABLE", str(table))
    items = _items("a.py::x", "b.py::y", "c.py::z1", "d.py::w", "c.py::z2", "b.py::v")
    file_order.pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == [
        "c.py::z1",
        "c.py::z2",
        "b.py::y",
        "b.py::v",
        "a.py::x",
        "d.py::w",
    ]


def test_the_recorder_merges_this_runs_files_into_the_table(monkeypatch, tmp_path):
    table = tmp_path / "file_seconds.json"
    table.write_text(
        json.dumps({"other": {"x.py": 1.0}, keras.backend.backend(): {"a.py": 5.0}})
    )
    monkeypatch.setattr(file_order, "TABLE", str(table))
    recorder = file_order._Recorder()
    for when, seconds in [("setup", 0.25), ("call", 2.0), ("teardown", 0.04)]:
        recorder.pytest_runtest_logreport(
            types.SimpleNamespace(nodeid="b.py::t", when=when, duration=seconds)
        )
    recorder.pytest_sessionfinish(None)
    assert json.loads(table.read_text()) == {
        "other": {"x.py": 1.0},
        keras.backend.backend(): {"a.py": 5.0, "b.py": 2.3},
    }


def test_every_file_in_the_table_exists():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(file_order.TABLE) as file:
        table = json.load(file)
    assert set(table) == {"tensorflow", "jax", "torch"}
    missing = {name for files in table.values() for name in files} - {
        name for name in _test_files(root)
    }
    assert not missing, f"{file_order.TABLE} names files that are gone: {sorted(missing)}"


def _test_files(root):
    for directory, _, files in os.walk(os.path.join(root, "tests")):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                yield os.path.relpath(os.path.join(directory, name), root)


def test_a_whole_machine_test_must_be_marked_in_its_file(tmp_path):
    """`make test` finds the serial run's files by grepping for the mark."""
    from tests.conftest import _check_whole_machine_files

    def item(text, marked=True):
        path = tmp_path / f"test_{len(text)}.py"
        path.write_text(text)
        return types.SimpleNamespace(
            nodeid=f"{path.name}::test_x",
            path=path,
            get_closest_marker=lambda name: marked and name == "whole_machine",
        )

    _check_whole_machine_files([item("pytestmark = pytest.mark.whole_machine\n")])
    _check_whole_machine_files([item("def test_x(): pass\n", marked=False)])
    with pytest.raises(pytest.UsageError, match="marked whole_machine but its file"):
        _check_whole_machine_files([item("pytestmark = MARKS\n")])
