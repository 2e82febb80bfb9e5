"""What heal finds after a crash, without a lab: the stack's open drills, the record's agents (by
pid and command line), and the workload processes' own watch of their starter and deadline."""

import json
import subprocess
import sys
import time

import pytest

from dcdrill.chaos.faults import recovery
from dcdrill.infra.constants import now_ms
from dcdrill.infra.observe import open_drills
from dcdrill.record import DrillRecord
from dcdrill.record.contents import AGENTS, BadRecord


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_open_drills_are_noted_once_and_forgotten(cache):
    open_drills.note("local", "/r/1")
    open_drills.note("local", "/r/2")
    open_drills.note("local", "/r/1")
    assert open_drills.listed("local") == ["/r/1", "/r/2"]
    assert open_drills.listed("aws-3az") == []
    open_drills.forget("local", "/r/1")
    open_drills.forget("local", "/r/1")  # twice: a no-op
    assert open_drills.listed("local") == ["/r/2"]
    open_drills.forget_all("local")
    assert open_drills.listed("local") == []


def _sleeper(mark: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", mark])


def test_stop_agents_stops_the_records_processes_and_no_other(tmp_path):
    record = DrillRecord(tmp_path / "run")
    folder = f"/lab/hosts/c1/agents/{record.agent_key}"
    # the experiment names the record; a workload process's host-access session names its folder
    ours, session, other = _sleeper(str(record.path)), _sleeper(folder), _sleeper("someone-else")
    try:
        record.note_agent("experiment", ours.pid)
        record.note_agent("p1", session.pid, "c1.dc-a.lab", folder=folder)
        record.note_agent("c1", other.pid, "c1.dc-a.lab", folder=folder + "-not")  # a reused pid
        record.note_agent("p2", 4_000_000)  # long gone
        assert [a["name"] for a in recovery.running_agents(record)] == ["experiment", "p1"]
        assert recovery.stop_agents(record) == [f"experiment (pid {ours.pid})", f"p1 (pid {session.pid})"]
        assert ours.wait(5) < 0 and session.wait(5) < 0  # both ended by a signal
        assert other.poll() is None
        assert recovery.stop_agents(record) == []  # twice: nothing left
    finally:
        for p in (ours, session, other):
            p.kill()
            p.wait()


def test_uncollected_lists_the_workload_processes_whose_folder_has_not_come_back(tmp_path):
    record = DrillRecord(tmp_path / "run")
    record.note_agent("experiment", 100)
    record.note_agent("p1", 101, "c1.dc-a.lab", folder="/h/c1/agents/x")
    record.note_agent("c1", 102, "c2.dc-b.lab", folder="/h/c2/agents/x")
    assert [a["name"] for a in record.uncollected()] == ["p1", "c1"]
    record.note_collected("c1.dc-a.lab", "/h/c1/agents/x")
    assert [a["name"] for a in record.uncollected()] == ["c1"]
    time.sleep(0.002)
    record.note_agent("a", 103, "c1.dc-a.lab", folder="/h/c1/agents/x")  # the audit, after the collection
    assert [a["name"] for a in record.uncollected()] == ["c1", "a"]
    assert (
        "agents.jsonl: c1's files on c2.dc-b.lab never came back (/h/c2/agents/x; `dcdrill heal` collects them)"
        in record.incomplete()
    )
    record.note_collected("c2.dc-b.lab", "/h/c2/agents/x", lost=True)
    record.note_collected("c1.dc-a.lab", "/h/c1/agents/x")
    assert record.uncollected() == []
    assert record.incomplete() == [
        "collected.jsonl: the files in /h/c2/agents/x on c2.dc-b.lab were lost before they came back"
    ]


def test_a_bad_agents_line_is_named_by_file_and_line(tmp_path):
    record = DrillRecord(tmp_path)
    (tmp_path / AGENTS).write_text(
        json.dumps({"name": "p1", "pid": 12, "started_ms": 1})
        + "\n"
        + json.dumps({"name": "p2", "pid": -3, "started_ms": 1})
        + "\n"
    )
    with pytest.raises(BadRecord, match=rf"{AGENTS}:2: pid must be a positive integer"):
        record.agents()


# The starter: starts the watched process, then dies at once (a crashed drill).
WATCHED = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
from dcdrill.validation.clients import StopFlag
flag = StopFlag(parent_pid=int(sys.argv[2]), deadline_ms=int(sys.argv[1]))
t = time.monotonic()
flag.wait(60)
print(f"{flag.why} after {time.monotonic() - t:.1f}s", flush=True)
''', sys.argv[1], str(os.getpid())], stdout=open(sys.argv[2], "w"))
"""


@pytest.mark.parametrize("deadline_s, why", [(600, "the process that started it"), (1.5, "its deadline passed")])
def test_a_workload_process_stops_when_its_starter_dies_or_its_deadline_passes(tmp_path, deadline_s, why):
    out = tmp_path / "out"
    # The starter lives on (sleeps) when the test is about the deadline.
    script = WATCHED + ("import time; time.sleep(30)\n" if why.startswith("its deadline") else "")
    starter = subprocess.Popen(
        [sys.executable, "-c", script, str(now_ms() + int(deadline_s * 1000)), str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (out.exists() and out.read_text()):
            time.sleep(0.2)
        assert out.read_text().startswith(why), out.read_text()
        assert float(out.read_text().split(" after ")[1].rstrip("s\n")) < 5
    finally:
        starter.kill()
        starter.wait()
