"""A client host's clock against the control's (issue: the record as a strict contract, clocks):
the runner on the host answers each {"clock": N} at once with its clock (host_process), the
control takes the quickest of its round trips' midpoints (HostProcess.clock), the record keeps
each reading (clocks.jsonl), and a record whose host was surely off by more than the tolerance is
refused. The lab's hosts share one clock, so a skewed host is a runner whose clock is moved."""

import json
import subprocess
import sys
import threading

import pytest

from dcdrill.record import DrillRecord
from dcdrill.record.contents import CLOCK_TOLERANCE_MS, CLOCKS, parse_clocks
from dcdrill.spark import verify
from dcdrill.validation import workload
from dcdrill.validation.workload import HostProcess

# The real runner's stdin loop, on a host whose clock is SKEW_MS ahead of the control's.
RUNNER = """
import subprocess, sys, time
from dcdrill.validation import host_process
skew_ns = int(sys.argv[1]) * 1_000_000
real = time.time_ns
host_process.time.time_ns = lambda: real() + skew_ns
host_process._serve_stdin(subprocess.Popen(["sleep", "60"]))
"""


def _host_process(tmp_path, skew_ms: int) -> HostProcess:
    """A HostProcess whose session is the runner above, on this machine."""
    proc = HostProcess.__new__(HostProcess)
    proc.name, proc.module, proc.exit, proc.said = "p1", "producer", None, ""
    proc._record = DrillRecord(tmp_path)
    proc.acks = []
    proc._clock_answers, proc._asked = workload.queue.Queue(), workload.itertools.count(1)
    proc.proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(skew_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    proc._reader = threading.Thread(target=proc._read, daemon=True)
    proc._reader.start()
    return proc


@pytest.mark.parametrize("skew_ms", [0, 2_000, -1_500])
def test_the_control_reads_a_hosts_clock_offset_to_within_half_a_round_trip(tmp_path, skew_ms):
    proc = _host_process(tmp_path, skew_ms)
    try:
        offset, rtt = proc.clock()
        assert abs(offset - skew_ms) <= rtt / 2 + 2 and rtt < 2_000, (offset, rtt)
    finally:
        proc.stop()
        assert proc.proc.wait(10) == 0  # its stdin closed: the runner SIGTERMed its child and ended
    assert proc.clock() is None  # a stopped process answers no more


def test_a_runner_that_serves_no_clock_is_asked_once(tmp_path, monkeypatch):
    monkeypatch.setattr(workload, "CLOCK_WAIT_S", 0.5)
    proc = HostProcess.__new__(HostProcess)
    proc._clock_answers, proc._asked = workload.queue.Queue(), workload.itertools.count(1)
    proc.proc = subprocess.Popen(["sleep", "5"], stdin=subprocess.PIPE, text=True)
    try:
        assert proc.clock() is None and next(proc._asked) == 2
    finally:
        proc.proc.kill()


def _clocks(tmp_path, *readings) -> DrillRecord:
    record = DrillRecord(tmp_path)
    for host, offset, rtt in readings:
        record.note_clock("p1", host, "start", offset, rtt)
    return record


def test_a_record_whose_host_was_surely_off_by_more_than_the_tolerance_is_refused(tmp_path):
    record = _clocks(tmp_path, ("c1.dc-a.lab", 3, 10), ("c2.dc-b.lab", CLOCK_TOLERANCE_MS + 40, 100))
    assert record.clock_problems() == []  # 540 ms, good to 50: possibly within 500
    record = _clocks(tmp_path / "off", ("c2.dc-b.lab", -(CLOCK_TOLERANCE_MS + 60), 100))
    [problem] = record.clock_problems()
    assert problem.startswith(f"{CLOCKS}: c2.dc-b.lab's clock was -560 ms off the control's at p1's start")
    with pytest.raises(verify.BadInput, match="a client host's clock was off: clocks.jsonl: c2.dc-b.lab"):
        verify.verify(record)  # refused (exit 2), before any Spark


@pytest.mark.parametrize(
    "row,named",
    [
        ({"host": "c1", "at": "start", "offset_ms": 1, "rtt_ms": 1, "at_ms": 1}, "name must be a string"),
        (
            {"name": "p1", "host": "c1", "at": "then", "offset_ms": 1, "rtt_ms": 1, "at_ms": 1},
            "at must be start or end",
        ),
        (
            {"name": "p1", "host": "c1", "at": "end", "offset_ms": 1.5, "rtt_ms": 1, "at_ms": 1},
            "offset_ms must be an integer",
        ),
        (
            {"name": "p1", "host": "c1", "at": "end", "offset_ms": 1, "rtt_ms": -1, "at_ms": 1},
            "rtt_ms must be a whole number",
        ),
    ],
)
def test_a_garbled_clock_reading_is_named(row, named):
    with pytest.raises(ValueError, match=named):
        parse_clocks((json.dumps(row) + "\n").encode(), CLOCKS)
