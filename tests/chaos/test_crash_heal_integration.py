"""A drill killed halfway, on the real lab: `dcdrill heal` restores what the fault changed, stops
what the drill started, and a second heal finds nothing to do. Each case kills another of the
drill's processes during another fault (issue: crash-safe drills)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcdrill.chaos.faults import recovery
from dcdrill.infra import stack as stacks
from dcdrill.infra.observe import open_drills, status, status_text
from dcdrill.record import DrillRecord
from tests.lab_access import TEST_RATE

pytestmark = pytest.mark.lab
DCDRILL = [sys.executable, "-m", "dcdrill.cli"]


def _processes_naming(path: Path) -> list[int]:
    """The drill's processes still running: here (naming its record) and on its client hosts
    (naming their folder of it, which the record's agents say)."""
    folders = [a["folder"] for a in DrillRecord(path).agents() if a.get("folder")] if path.exists() else []
    marks = [str(path).encode(), *(f.encode() for f in folders)]
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if any(mark in cmdline for mark in marks):
                out.append(int(proc.name))
    return out


def _wait_for_the_fault(run: Path, proc: subprocess.Popen, timeout_s: float = 240) -> None:
    """Until the fault's undo is noted (the change is being made), or fail with the drill's output."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (run / "chaos-state.json").exists() and any(a["undo"] for a in DrillRecord(run).active_faults()):
            time.sleep(2)  # well into the fault
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"the fault never started: {proc.communicate()[0][-3000:]}")


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


FAULTS = {
    "tiebreaker-loss": ["--experiment", "tiebreaker-loss"],
    "kill-dc": ["--experiment", "kill-dc"],
    "isolate-dc": ["--experiment", "isolate-dc"],
    "slow-link": ["--experiment", "slow-link", "--latency-ms", "40", "--loss-pct", "0"],
}
# What is SIGKILLed, alone, during the fault:
#  dcdrill   chaos run lives on with its workload: heal stops them and undoes the fault;
#  chaos run dcdrill heals in its own `finally` and stops (no journal); the workload follows its starter;
#  workload  the drill lives on: heal stops chaos run, whose end lets dcdrill finish, and undoes the fault.
KILLED = ("dcdrill", "chaos run", "workload")


def _start_until_the_fault(run: Path, fault: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        DCDRILL + ["drill", "--stack", "local", "--hold", "300", "--run-dir", str(run), *TEST_RATE, *FAULTS[fault]],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    _wait_for_the_fault(run, proc)
    agents = DrillRecord(run).agents()
    experiment = next(a["pid"] for a in agents if a["name"] == "experiment")
    # the workload's processes themselves, on their client hosts (not the control's sessions to them)
    on_hosts = [
        pid
        for pid in _processes_naming(run)
        if b"dcdrill.validation." in Path(f"/proc/{pid}/cmdline").read_bytes()
        and b"host_process" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    return proc, {"dcdrill": [proc.pid], "chaos run": [experiment], "workload": on_hosts}


def _heal_and_check(lab, run: Path, proc: subprocess.Popen, busy: bool = False) -> str:
    """Heal the stack. `busy`: a process of the drill still holds the stack's lock (the drill
    itself, or its chaos run after the drill was killed): a plain heal is refused at once, naming
    it, and changes nothing; `--force` goes ahead."""
    force = []
    if busy:
        res = subprocess.run(DCDRILL + ["heal", "--stack", "local"], capture_output=True, text=True, timeout=60)
        assert res.returncode == 2 and "stack local is busy: pid " in res.stderr, res.stdout + res.stderr
        assert DrillRecord(run).active_faults(), "a refused heal undid a fault"
        force = ["--force"]
    res = subprocess.run(DCDRILL + ["heal", "--stack", "local", *force], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    proc.wait(120)  # a drill that outlived the kill ends once heal stopped its chaos run
    if run.exists():
        record = DrillRecord(run)
        assert not record.active_faults(), res.stdout
        assert all(f["end_ms"] for f in record.faults()), record.faults()
    assert (
        stacks.backend("local").faults_in_place(stacks.load_deployment("local")) == []
    )  # no DROP rule, links as configured
    assert _processes_naming(run) == [], "a process of the drill is still running"
    if run.exists():  # every client host's files came back into the record, none is left there
        assert DrillRecord(run).uncollected() == [] and (run / "produced").is_dir()
        assert not [f for a in DrillRecord(run).agents() if a.get("folder") and Path(f := a["folder"]).exists()]
    assert open_drills.listed("local") == []
    deadline = time.monotonic() + 180  # a killed DC's services were started again
    while not status.healthy(st := status.cluster_status(lab)) and time.monotonic() < deadline:
        time.sleep(2)
    assert status.healthy(st), status_text.render(st)
    again = subprocess.run(DCDRILL + ["heal", "--stack", "local"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "nothing to heal" in again.stdout, again.stdout + again.stderr
    assert recovery.left_behind("local") == []
    return res.stdout


# CI runs two cases; DCDRILL_SLOW_LABS=1 runs all twelve. A restart from the record is the
# tiebreaker's (one ZooKeeper: kill-dc's heal waits out the brokers' sessions, 30 s more, and its
# drill heals in CI). slow-link with its workload killed is the kept-copy case below (every process killed).
DIAGONAL = {("tiebreaker-loss", "dcdrill"), ("isolate-dc", "chaos run")}
CASES = [
    pytest.param(
        fault,
        killed,
        marks=()
        if (fault, killed) in DIAGONAL
        else pytest.mark.skipif(
            not os.environ.get("DCDRILL_SLOW_LABS"), reason="off CI's diagonal: DCDRILL_SLOW_LABS=1 runs it"
        ),
    )
    for fault in FAULTS
    for killed in KILLED
]


@pytest.mark.parametrize("fault,killed", CASES)
def test_heal_after_a_process_of_the_drill_is_killed_during_the_fault(lab, tmp_path, fault, killed):
    run = tmp_path / fault
    proc, pids = _start_until_the_fault(run, fault)
    _kill(pids[killed])
    if killed == "chaos run":
        proc.wait(120)  # dcdrill's own heal runs first; the one below must find the lab restored
    elif killed == "dcdrill":
        proc.wait(10)
        assert DrillRecord(run).active_faults(), "the fault was healed before heal ran: the case tests nothing"
    _heal_and_check(lab, run, proc, busy=killed != "chaos run")


def test_heal_from_the_kept_copy_when_the_drill_and_its_record_are_gone(lab, tmp_path):
    """The machine that drilled is gone with its record (a CI runner): heal reads the fault state
    the backend kept outside the record, and undoes the fault from it."""
    run = tmp_path / "lost"
    proc, pids = _start_until_the_fault(run, "slow-link")
    for what in KILLED:
        _kill(pids[what])
    proc.wait(10)
    shutil.rmtree(run)
    open_drills.forget_all("local")
    assert any("kept outside the record" in line for line in recovery.left_behind("local"))
    out = _heal_and_check(lab, run, proc)
    assert "healed degrade-link" in out and "from the copy kept outside its record" in out, out


def test_lab_up_and_drill_refuse_a_stack_a_fault_was_left_on(lab, tmp_path):
    """A DC cut off by hand (or by a drill whose record is gone): `lab up` and `drill` name
    `dcdrill heal` and start nothing; heal undoes it from the live state alone."""
    from dcdrill.infra.lab import netns

    netns.isolate_dc(2, "ingress")
    try:
        for argv in (
            ["lab", "up", "--stack", "local"],
            ["drill", "--stack", "local", "--run-dir", str(tmp_path / "r")],
        ):
            res = subprocess.run(DCDRILL + argv, capture_output=True, text=True, timeout=120)
            assert res.returncode == 2, res.stdout + res.stderr
            assert "dc-b is cut off at the router" in res.stderr and "dcdrill heal --stack local" in res.stderr
        assert not (tmp_path / "r").exists()
        res = subprocess.run(DCDRILL + ["heal", "--stack", "local"], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and "healed in place: dc-b is cut off at the router" in res.stdout, res.stdout
    finally:
        netns.heal_isolation(2)
    assert not netns.is_isolated(2)
