"""Longest test files first, so that two pytest-xdist workers end together.

`make test` hands whole files to two workers (`--dist loadfile`); xdist's own
order is by number of tests per file, so a long file with few tests could
start last and leave the other worker idle (TensorFlow run on an AMD Zen 4:
one worker idle for the last 51 of 578 s, the 74 s multi-process test
having started at 473 s). Here files are ordered by their seconds in an
earlier run on the same backend (`tests/file_seconds.json`), longest
first, which `make test` keeps (`--no-loadscope-reorder`); files not in
the table follow in collection order. The order is only a schedule: a
stale table makes the run slower, never different.

Refresh the table (each backend's run writes its own entry):

    KERAS_BACKEND=jax python -m pytest -n 2 --dist loadfile --record-file-seconds tests
"""

import collections
import json
import os

import keras

TABLE = os.path.join(os.path.dirname(__file__), "file_seconds.json")


def pytest_addoption(parser):
    parser.addoption(
        "--record-file-seconds",
        action="store_true",
        help=f"write each test file's seconds on this backend to {TABLE}",
    )


def _table():
    if not os.path.exists(TABLE):
        return {}
    with open(TABLE) as file:
        return json.load(file)


def _file(nodeid):
    """The table's key for a test: its file, as pytest names it."""
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    seconds = _table().get(keras.backend.backend(), {})
    # sort() is stable: tests keep their order within a file.
    items.sort(key=lambda item: -seconds.get(_file(item.nodeid), 0.0))


class _Recorder:
    def __init__(self):
        self.seconds = collections.defaultdict(float)

    def pytest_runtest_logreport(self, report):
        self.seconds[_file(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session):
        table = _table()
        # Merged: a run of some files updates theirs and keeps the others'.
        seconds = {**table.get(keras.backend.backend(), {}), **self.seconds}
        table[keras.backend.backend()] = {k: round(v, 1) for k, v in seconds.items()}
        with open(TABLE, "w") as file:
            json.dump(table, file, indent=1, sort_keys=True)
            file.write("\n")


def pytest_configure(config):
    # Only the controller records: it receives every worker's reports.
    if config.getoption("--record-file-seconds") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(), "kbert_file_seconds_recorder")
