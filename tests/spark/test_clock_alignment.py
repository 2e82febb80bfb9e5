"""Fault windows on the producers' clocks (spark/clock_alignment.py): a producer host 400 ms
ahead of the control, within the tolerance, has its rows set against windows 400 ms later."""

from dcdrill import exits
from dcdrill.record import DrillRecord
from dcdrill.spark import clock_alignment
from tests import records
from tests.records import a, c, p, verified

FAULT = {"fault": "kill-dc", "target": "dc-b", "start_ms": 1600, "end_ms": 2200}  # the control's clock


def _reading(name, offset, rtt, at="start"):
    return {"name": name, "host": "c1.dc-a.lab", "at": at, "offset_ms": offset, "rtt_ms": rtt, "at_ms": 1}


def test_the_shift_is_the_producers_median_offset_and_the_residual_bounds_the_rest():
    clocks = [_reading("p1", 400, 4), _reading("p2", 410, 2), _reading("p1", 396, 6, "end"), _reading("c1", -900, 2)]
    assert clock_alignment.alignment(clocks) == {"shift_ms": 400, "residual_ms": 11, "readings": 3}
    assert clock_alignment.alignment([_reading("c1", 30, 2)]) == {"shift_ms": 0, "residual_ms": None, "readings": 0}


def test_windows_move_by_the_shift_and_an_open_one_stays_open():
    moved = clock_alignment.on_producer_clocks([FAULT, {**FAULT, "end_ms": None}], 400)
    assert [(f["start_ms"], f["end_ms"]) for f in moved] == [(2000, 2600), (2000, None)]
    assert FAULT["start_ms"] == 1600  # the record's rows are not changed


def test_a_producer_host_ahead_of_the_control_is_read_against_windows_on_its_clock(tmp_path, spark):
    # p1's host stamps sends 990, 1000, ... 2980 ms by its own clock, 400 ms ahead of the control's.
    P = [p("p1", i, "ok", 0, i, 1000 + 10 * i) for i in range(200)]
    run = records.write(
        tmp_path / "ahead",
        P,
        [a(0, i, "p1", i) for i in range(200)],
        [c(0, i, "p1", i) for i in range(200)],
        faults=[FAULT],
    )
    DrillRecord(run).note_clock("p1", "c1.dc-a.lab", "start", 400, 4)
    code, s = verified(str(run), spark=spark)
    assert code == exits.EXIT_PASS, s.get("violations")
    phases = {r["phase"]: r["acked"] for r in s["phases"]}
    # Sent before 2000 on p1's clock (1600 on the control's): 101 records, not the 62 sent before 1600.
    assert phases == {"before": 101, "during kill-dc dc-b": 60, "after kill-dc dc-b": 39}, phases
    assert s["clock_alignment"] == {"shift_ms": 400, "residual_ms": 2, "readings": 1}
    assert (s["faults"][0]["start_ms"], s["faults"][0]["end_ms"]) == (1600, 2200)  # as the record says


def test_a_window_starts_when_its_fault_took_effect_not_when_it_was_asked_for():
    lines = [{**FAULT, "start_ms": 1200, "end_ms": None}, {**FAULT, "start_ms": 1200, "acted_ms": 1600}]
    assert clock_alignment.as_acted([{**lines[0], **lines[1], "end_ms": 2200}]) == [
        {**FAULT, "start_ms": 1600, "acted_ms": 1600, "requested_ms": 1200}
    ]
    assert clock_alignment.as_acted([FAULT]) == [FAULT]  # a record from before acted_ms


def test_a_fault_that_took_effect_late_is_read_from_then(tmp_path, spark):
    """FIS starts its actions 30 s or more after the request: the records sent in between were sent
    to a whole cluster, so the record reads as one whose fault was asked for when it took effect."""
    P = [p("p1", i, "ok", 0, i, 1000 + 10 * i) for i in range(200)]
    A, C = [a(0, i, "p1", i) for i in range(200)], [c(0, i, "p1", i) for i in range(200)]
    late = [
        {**FAULT, "start_ms": 1200, "end_ms": None},
        {"fault": "kill-dc", "target": "dc-b", "start_ms": 1200, "acted_ms": 1600},
        {**FAULT, "start_ms": 1200},
    ]
    _, s = verified(str(records.write(tmp_path / "late", P, A, C, faults=late)), spark=spark)
    _, asked_then = verified(str(records.write(tmp_path / "asked-then", P, A, C, faults=[FAULT])), spark=spark)
    assert s["phases"] == asked_then["phases"] and s["phases"][0]["phase"] == "before"
    assert (s["faults"][0]["start_ms"], s["faults"][0]["requested_ms"]) == (1600, 1200)
    assert "requested_ms" not in asked_then["faults"][0]
