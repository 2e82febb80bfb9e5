"""A record as its readers see it (record/reader.py): what makes it incomplete, what a verifier
must refuse to read or write through, and which host clocks were too far off."""

import json
import os

import pytest

from dcdrill.record.contents import BadRecord
from dcdrill.record.reader import RecordReader
from tests import records


def clean(tmp_path):
    return records.write(tmp_path / "run", [records.p("p1", 0, "ok", 0, 0, 1000)], [], [])


def test_a_whole_record_is_complete_and_each_crash_leaves_its_reason(tmp_path):
    run = clean(tmp_path)
    assert RecordReader(run).incomplete() == []
    (run / "faults.jsonl").write_text(json.dumps({"fault": "kill-dc", "target": "dc-a", "start_ms": 5}) + "\n")
    (run / "chaos-state.json").write_text(
        json.dumps({"active": [{"fault": "kill-dc", "target": "dc-a", "start_ms": 5, "undo": {}}]})
    )
    (run / "experiment.json").write_text("{}")
    got = RecordReader(run).incomplete()
    assert any("kill-dc dc-a has no end" in g for g in got), got
    assert any("still lists 1 fault(s) as active" in g for g in got), got
    assert any("chaos run never finished" in g for g in got), got


def test_a_fault_state_is_held_to_its_model(tmp_path):
    run = clean(tmp_path)
    (run / "chaos-state.json").write_text(json.dumps({"active": [{"fault": "kill-dc"}]}))
    with pytest.raises(BadRecord, match=r"chaos-state.json: active must be a list of active faults \(0.target"):
        RecordReader(run).incomplete()


def test_a_symlink_out_of_the_record_or_a_report_elsewhere_is_refused(tmp_path):
    run = clean(tmp_path)
    assert RecordReader(run).unsafe_paths() == []
    (tmp_path / "elsewhere.jsonl").write_text("")
    os.symlink(tmp_path / "elsewhere.jsonl", run / "produced" / "p9.jsonl")
    os.symlink(tmp_path, run / "report")
    got = RecordReader(run).unsafe_paths()
    assert any("p9.jsonl: a symlink leading outside the record" in g for g in got), got
    assert any("report: is a symlink; the report is written only inside the record" in g for g in got), got


def test_a_host_clock_off_by_more_than_the_tolerance_beyond_half_its_round_trip_is_named(tmp_path):
    run = clean(tmp_path)
    rows = [
        {
            "name": "p1",
            "host": "c1.dc-a.lab",
            "at": "start",
            "offset_ms": 450,
            "rtt_ms": 100,
            "at_ms": 1000,
        },  # within 500 + 50
        {"name": "p2", "host": "c2.dc-b.lab", "at": "end", "offset_ms": -700, "rtt_ms": 20, "at_ms": 9000},
    ]
    (run / "clocks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    [problem] = RecordReader(run).clock_problems(tolerance_ms=500)
    assert problem.startswith("clocks.jsonl: c2.dc-b.lab's clock was -700 ms off the control's at p2's end")
