"""The drill record module: its paths, the fault lines and the fault state heal reads."""

import json

import pytest

from dcdrill.record import DrillRecord, parse_faults


def test_paths_are_the_ones_record_md_names(tmp_path):
    r = DrillRecord(tmp_path)
    assert r.produced("p1") == tmp_path / "produced" / "p1.jsonl"
    assert r.consumed("c2") == tmp_path / "consumed" / "c2.jsonl"
    assert r.audit() == tmp_path / "audit" / "audit.jsonl"
    assert r.events("c1") == tmp_path / "events" / "c1.jsonl"
    assert r.report_dir == tmp_path / "report"
    with pytest.raises(ValueError, match="unknown ledger 'nope'"):
        r.ledger_dir("nope")


def test_a_fault_and_its_heal_are_one_entry(tmp_path):
    r = DrillRecord(tmp_path)
    started = r.fault_started("kill-dc", "dc-a", isr_at_start={"partitions": 6, "in_sync": 6})
    [open_fault] = r.faults()
    assert open_fault.get("end_ms") is None and open_fault["start_ms"] == started["start_ms"]
    ended = r.fault_ended(started)
    [f] = r.faults()
    assert f == {**started, "end_ms": ended["end_ms"]} and f["isr_at_start"] == {"partitions": 6, "in_sync": 6}
    lines = (tmp_path / "faults.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["end_ms"] >= json.loads(lines[0])["start_ms"]


def test_a_fault_line_without_start_is_named():
    with pytest.raises(ValueError, match="faults.jsonl:2: fault must be one of kill-dc, .*, got 'x'"):
        parse_faults(b'{"fault": "kill-dc", "target": "a", "start_ms": 1}\n{"fault": "x"}\n', "faults.jsonl")


def test_fault_state_is_replaced_whole_never_torn(tmp_path):
    r = DrillRecord(tmp_path)
    with r.fault_state() as state:
        state["active"].append({"fault": "kill-dc", "target": "dc-a", "start_ms": 1, "undo": {"restart": []}})
    assert r.active_faults()[0]["fault"] == "kill-dc"
    assert not (tmp_path / "chaos-state.tmp").exists()  # written aside, then renamed over
    with pytest.raises(RuntimeError):
        with r.fault_state() as state:
            state["active"] = []
            raise RuntimeError("crash before the write")
    assert len(r.active_faults()) == 1  # the old state stands
