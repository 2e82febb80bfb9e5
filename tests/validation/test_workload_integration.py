"""The workload on the real lab: ledgers, crash safety, bad input."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from dcdrill.validation import workload as wl
from dcdrill.record.ledger import read

pytestmark = pytest.mark.lab

DCDRILL = [sys.executable, "-m", "dcdrill.cli"]
TYPES = {
    "produced": {"producer_id": str, "seq": int, "topic": str, "partition": int, "key": (str, type(None)),
                 "send_ms": int, "status": str, "ack_ms": (int, type(None)), "offset": (int, type(None)),
                 "error": (str, type(None)), "dc": (str, type(None))},
    "consumed": {"consumer_id": str, "group": str, "topic": str, "partition": int, "offset": int,
                 "producer_id": str, "seq": int, "consume_ms": int, "dc": str},
    "audit": {"topic": str, "partition": int, "offset": int, "producer_id": str, "seq": int, "timestamp_ms": int},
}


def rows(run, kind):
    out = []
    for f in sorted((run / kind).glob("*.jsonl")):
        out += read(f)[0]
    return out


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_run_writes_ledgers_matching_the_schema(lab, tmp_path, client):
    run = tmp_path / "run"
    res = subprocess.run(DCDRILL + ["workload", "run", "--duration", "15", "--producers", "3", "--consumers", "2",
                                    "--topic", f"dcdrill-it-workload-{client}", "--client", client, "--run-dir", str(run)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for kind, types in TYPES.items():
        rs = rows(run, kind)
        assert rs, kind
        for r in rs[:500]:
            assert set(r) == set(types), (kind, r)
            for k, t in types.items():
                assert isinstance(r[k], t), (kind, k, r)
    produced = rows(run, "produced")
    assert {r["dc"] for r in produced} == {"dc-a", "dc-b"}
    assert {r["producer_id"] for r in produced} == {"p1", "p2", "p3"}
    for pid in ("p1", "p2", "p3"):  # dense sequence numbers, one row each
        seqs = sorted(r["seq"] for r in produced if r["producer_id"] == pid)
        assert seqs == list(range(len(seqs)))
    assert all((r["offset"] is not None) == (r["status"] == "ok") for r in produced)
    acked = {(r["producer_id"], r["seq"]) for r in produced if r["status"] == "ok"}
    assert acked and acked <= {(r["producer_id"], r["seq"]) for r in rows(run, "audit")}
    topo = json.loads((run / "topology.json").read_text())
    assert topo["replication_factor"] == 4 and topo["min_insync_replicas"] == 3


def test_sigkill_leaves_parseable_ledgers(lab, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(DCDRILL + ["workload", "produce", "--duration", "60", "--rate", "0", "--topic", "dcdrill-it-kill",
                                       "--run-dir", str(run)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(f.stat().st_size for f in (run / "produced").glob("*.jsonl")) < 100_000 \
            if (run / "produced").exists() else time.monotonic() < deadline:
        time.sleep(0.2)
    # SIGKILL the launcher and every producer process (they run in their own sessions).
    pids = subprocess.run(["pgrep", "-f", f"validation.producer.*{run}"], capture_output=True, text=True).stdout.split()
    for pid in pids + [str(proc.pid)]:
        os.kill(int(pid), signal.SIGKILL)
    proc.wait()
    files = list((run / "produced").glob("*.jsonl"))
    assert files
    total = 0
    for f in files:
        rs, _torn = read(f)  # raises on any malformed line but a torn last one
        total += len(rs)
    assert total > 100


def test_unreachable_bootstrap_is_a_clear_error_within_the_timeout(tmp_path):
    cfg = {**wl.asdict(wl.WorkloadSpec(bootstrap_timeout_ms=3000)), "producer_id": "p1", "dc": None,
           "run_dir": str(tmp_path), "bootstrap": ["127.0.0.1:1"]}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dcdrill.validation.producer", "--config", json.dumps(cfg)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no broker reachable at 127.0.0.1:1" in res.stderr
    assert time.monotonic() - t0 < 20


def test_bad_workload_input_is_refused(lab):
    with pytest.raises(ValueError, match="valid hosts: c1.dc-a.lab, c2.dc-b.lab"):
        wl.WorkloadSpec(hosts=["dc-z"]).validate(lab)
    with pytest.raises(ValueError, match="rate must be > 0"):
        wl.WorkloadSpec(rate=-5).validate(lab)
    with pytest.raises(ValueError, match="record_size must be > 0"):
        wl.WorkloadSpec(record_size=0).validate(lab)
    with pytest.raises(ValueError, match="does not exist"):
        wl.ensure_topic(lab, wl.WorkloadSpec(topic="it-missing"), create=False)
    # A drill's topic must be new: one written before would mix two drills' records.
    wl.ensure_topic(lab, wl.WorkloadSpec(topic="it-fresh"), fresh=True)
    with pytest.raises(ValueError, match="'it-fresh' exists already"):
        wl.ensure_topic(lab, wl.WorkloadSpec(topic="it-fresh"), fresh=True)


def test_a_killed_producer_leaves_info_rows_not_phantoms_and_the_drill_passes(lab, tmp_path):
    """SIGKILL one producer mid-run: its reserved, unfinished records become info rows (intent
    log), its seqs stay dense, and the record verifies as a pass with no phantom."""
    run = tmp_path / "run"
    proc = subprocess.Popen(DCDRILL + ["workload", "run", "--duration", "20", "--producers", "2", "--consumers", "1",
                                       "--rate", "300", "--topic", "dcdrill-it-killed-producer", "--run-dir", str(run)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    victim = []
    while time.monotonic() < deadline and not victim:
        time.sleep(0.5)
        ledger = run / "produced" / "p1.jsonl"
        if ledger.exists() and ledger.stat().st_size > 50_000:
            victim = subprocess.run(["pgrep", "-f", f"validation.producer.*{run}.*\"producer_id\": \"p1\""],
                                    capture_output=True, text=True).stdout.split()
    assert victim, "producer p1 never got going"
    os.kill(int(victim[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    produced = rows(run, "produced")
    p1 = sorted(r["seq"] for r in produced if r["producer_id"] == "p1")
    assert p1 == list(range(len(p1)))
    recovered = [r for r in produced if r["producer_id"] == "p1" and "intent log" in (r["error"] or "")]
    assert recovered and all(r["status"] == "info" for r in recovered)
    res = subprocess.run(DCDRILL + ["verify", str(run), "--json", "--quiet"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    counts = json.loads(res.stdout)["counts"]
    assert counts["phantoms"] == 0 and counts["acked_lost"] == 0 and counts["indeterminate"] >= len(recovered)
