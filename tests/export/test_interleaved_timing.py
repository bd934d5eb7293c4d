"""`kbert verify` times its rows interleaved (`time_rows`): a machine busy for
a while slows every row alike, so it cannot reorder the ranking.

The rows' timers advance a fake clock; the machine is three times slower for
the first two rounds of batch-1 calls.
"""

import pytest

from kbert.export import measurements

pytestmark = pytest.mark.backend_independent  # kbert's Python only (tests/conftest.py)


class Machine:
    def __init__(self, busy_calls):
        self.now, self.calls, self.busy_calls = 0.0, [], busy_calls

    def timer(self, name, cost):
        def run():
            slow = 3.0 if len(self.calls) in self.busy_calls else 1.0
            self.calls.append(name)
            self.now += cost * slow

        return run


def rows_on(machine, closed):
    return [
        {
            "artifact": name,
            "examples": 10,
            "timers": {
                "one": machine.timer(f"{name}.one", cost),
                "many": machine.timer(f"{name}.many", 10 * cost),
                "close": (lambda name=name: closed.append(name)) if name == "b" else None,
            },
        }
        for name, cost in [("a", 1.0), ("b", 2.0)]
    ]


def test_rows_are_timed_in_rotating_rounds_and_a_busy_spell_slows_each_alike(
    monkeypatch,
):
    # Calls 0-3 warm up (a.one, a.many, b.one, b.many); 4-7 are the first two
    # latency rounds, both rows in each.
    machine, closed = Machine(busy_calls=range(4, 8)), []
    monkeypatch.setattr(measurements.time, "perf_counter", lambda: machine.now)
    timed = measurements.time_rows(rows_on(machine, closed), repeats=5, passes=3)
    assert machine.calls[:4] == ["a.one", "a.many", "b.one", "b.many"]
    latency_order = [call[0] for call in machine.calls[4:14]]
    assert latency_order == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert [call[0] for call in machine.calls[14:]] == ["a", "b", "b", "a", "a", "b"]
    # Medians: 1 s and 2 s per call, 10 and 20 s per pass of 10 examples.
    assert [row["latency ms"] for row in timed] == [1e3, 2e3]
    assert [row["texts/s"] for row in timed] == [1.0, 0.5]
    assert all("timers" not in row for row in timed) and closed == ["b"]
    # One after the other, the busy spell lands on row a alone and ranks it
    # below row b: the reason for the rotation.
    sequential = Machine(busy_calls=range(0, 4))
    monkeypatch.setattr(measurements.time, "perf_counter", lambda: sequential.now)
    one_after_another = [
        measurements.median_seconds(row["timers"]["one"], repeats=5, warmup=0)
        for row in rows_on(sequential, [])
    ]
    assert one_after_another == [3.0, 2.0]


def test_rows_timed_elsewhere_are_kept_and_timers_close_on_error(monkeypatch):
    machine, closed = Machine(busy_calls=()), []
    rows = rows_on(machine, closed)
    elsewhere = {"artifact": "saved_model", "latency ms": 7.0, "texts/s": 3.0}

    def fails():
        raise RuntimeError("the runtime crashed")

    rows[0]["timers"]["many"] = fails
    with pytest.raises(RuntimeError, match="crashed"):
        measurements.time_rows([elsewhere, *rows], repeats=1)
    assert closed == ["b"]  # closed although timing stopped
    assert elsewhere == {"artifact": "saved_model", "latency ms": 7.0, "texts/s": 3.0}
    kept = measurements.time_rows([elsewhere], repeats=1)
    assert kept == [elsewhere]
