"""The workload on the real lab: ledgers, crash safety, bad input."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcdrill.chaos.faults import recovery
from dcdrill.record import DrillRecord
from dcdrill.record.ledger import read
from dcdrill.validation import workload as wl
from tests.process_configs import process_config

pytestmark = pytest.mark.lab

DCDRILL = [sys.executable, "-m", "dcdrill.cli"]
TYPES = {
    "produced": {
        "producer_id": str,
        "seq": int,
        "topic": str,
        "partition": int,
        "key": (str, type(None)),
        "send_ms": int,
        "status": str,
        "ack_ms": (int, type(None)),
        "offset": (int, type(None)),
        "error": (str, type(None)),
        "dc": (str, type(None)),
    },
    "consumed": {
        "consumer_id": str,
        "group": str,
        "topic": str,
        "partition": int,
        "offset": int,
        "producer_id": str,
        "seq": int,
        "consume_ms": int,
        "dc": str,
    },
    "audit": {"topic": str, "partition": int, "offset": int, "producer_id": str, "seq": int, "timestamp_ms": int},
}


def rows(run, kind):
    out = []
    for f in sorted((run / kind).glob("*.jsonl")):
        out += read(f)[0]
    return out


# The java client's ledgers: the tiebreaker drills (tests/chaos/test_drill_integration.py) run it.
@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_run_writes_ledgers_matching_the_schema(lab, tmp_path, client):
    run = tmp_path / "run"
    res = subprocess.run(
        DCDRILL
        + [
            "workload",
            "run",
            "--duration",
            "8",  # seconds of every ledger: the schema needs rows, not volume
            "--producers",
            "3",
            "--consumers",
            "2",
            "--topic",
            f"dcdrill-it-workload-{client}",
            "--client",
            client,
            "--run-dir",
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
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
    header = json.loads((run / "intents" / "p1.jsonl").read_text().splitlines()[0])
    settings = header["client_settings"]
    assert header["client"] == client and not [v for v in settings.values() if "password" in v.lower()]
    assert (settings["enable.idempotence"], settings["retries"]) == ("false", "0")  # the drill's settings


def test_transactions_on_the_java_client_commit_and_abort_and_readers_see_only_the_committed(lab, tmp_path):
    """Kafka's own transactions over SASL_SSL with the stack's ACLs: each producer commits or
    aborts every 20 records; the read_committed consumers and audit see the committed ones, each
    once, and none of the aborted; the transactions ledger holds each to its model."""
    from dcdrill.record import models

    run = tmp_path / "txn"
    argv = ["workload", "run", "--client", "java", "--transactions", "20", "--abort-fraction", "0.3"]
    argv += ["--duration", "15", "--producers", "2", "--consumers", "2", "--topic", "dcdrill-it-txn"]
    res = subprocess.run(DCDRILL + argv + ["--run-dir", str(run)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    txns = [
        models.Transaction.model_validate(t) for p in ("p1", "p2") for t in read(run / "transactions" / f"{p}.jsonl")[0]
    ]
    assert {(t.meant, t.outcome) for t in txns} == {("commit", "committed"), ("abort", "aborted")}, txns
    produced = {(r["producer_id"], r["seq"]): r for r in rows(run, "produced")}
    committed, aborted = set(), set()
    for t in txns:
        seqs = {(t.producer_id, s) for s in range(t.first_seq, t.first_seq + t.records)}
        (committed if t.outcome == "committed" else aborted).update(seqs)
    assert committed and aborted and committed | aborted == set(produced)
    assert {produced[k]["status"] for k in committed} == {"ok"} and {produced[k]["status"] for k in aborted} == {"fail"}
    audited = [(r["producer_id"], r["seq"]) for r in rows(run, "audit")]
    assert sorted(audited) == sorted(committed)  # read_committed: every committed record once, no aborted one
    assert {(r["producer_id"], r["seq"]) for r in rows(run, "consumed")} <= committed
    verified = subprocess.run(DCDRILL + ["verify", str(run)], capture_output=True, text=True, timeout=300)
    assert verified.returncode == 0 and "verdict: PASS" in verified.stdout, verified.stdout + verified.stderr
    assert "lost commits 0, torn transactions 0, unknown torn 0, aborted in log 0, aborted reads 0" in verified.stdout


def _progress(run, name: str) -> int:
    """What a process had acknowledged or consumed, from the status it relays to the control."""
    kind = "producer" if name.startswith("p") else "consumer"
    try:
        st = json.loads((run / "status" / f"{DrillRecord.status_name(kind, name)}.json").read_text())
    except (OSError, ValueError):
        return 0
    return st.get("ok", 0) + st.get("delivered", 0)


def _workload_pids(run, name: str | None = None) -> list[int]:
    """The workload processes on the client hosts, by the host folders the record noted."""
    folders = (
        {a["folder"] for a in DrillRecord(run).agents() if a.get("folder")}
        if (run / "agents.jsonl").exists()
        else set()
    )
    out = []
    for proc in os.listdir("/proc"):
        if not proc.isdigit():
            continue
        try:
            cmd = open(f"/proc/{proc}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if (
            "dcdrill.validation." in cmd
            and any(f'"run_dir": "{f}"' in cmd for f in folders)
            and (name is None or f'"producer_id": "{name}"' in cmd or f'"consumer_id": "{name}"' in cmd)
        ):
            out.append(int(proc))
    return out


def test_sigkill_leaves_parseable_ledgers_on_the_hosts_which_heal_collects(lab, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        DCDRILL
        + [
            "workload",
            "produce",
            "--duration",
            "60",
            "--rate",
            "0",
            "--topic",
            "dcdrill-it-kill",
            "--run-dir",
            str(run),
        ],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and sum(_progress(run, p) for p in ("p1", "p2", "p3")) < 1000:
        time.sleep(0.2)
    # SIGKILL the launcher and every producer process on the hosts.
    producers = _workload_pids(run)
    assert producers, "no producer ran on a client host"
    for pid in producers + [proc.pid]:
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    record = DrillRecord(run)
    assert not (run / "produced").exists(), "the ledgers came to the control before anything collected them"
    folders = {(a["cluster"], a["host"], a["folder"]) for a in record.uncollected()}
    assert folders and all(Path(f).is_dir() for _, _, f in folders)  # still on the hosts' own disks
    assert recovery.collect_agents("local", record)
    assert record.uncollected() == [] and not any(Path(f).exists() for _, _, f in folders)
    files = list((run / "produced").glob("*.jsonl"))
    assert files
    total = 0
    for f in files:
        rs, _torn = read(f)  # raises on any malformed line but a torn last one
        total += len(rs)
    assert total > 100


def test_a_workload_whose_files_do_not_come_back_fails_naming_the_host(lab, tmp_path):
    """The record is assembled from what comes back from the client hosts: a host folder lost
    before the transfer fails the workload's stop (so a drill), naming the host and the folder."""
    import shutil

    from dcdrill.infra.observe import hostaccess

    run = tmp_path / "run"
    spec = wl.WorkloadSpec(topic="dcdrill-it-lost", producers=2, consumers=0, duration_s=None, rate=100.0)
    wl.ensure_topic(lab, spec)
    w = wl.Workload(run, lab, spec).start()
    deadline = time.monotonic() + 90
    while _progress(run, "p1") < 100 and time.monotonic() < deadline:
        time.sleep(0.5)
    lost = dict(w.procs)["p1"]
    shutil.rmtree(lost.folder)  # the host's disk lost the drill's folder
    with pytest.raises(hostaccess.AgentFailed, match=f"{lost.folder} on {lost.host.name} did not come back"):
        w.stop()
    record = DrillRecord(run)
    assert recovery.collect_agents("local", record)  # what did come back is collected; nothing is left
    assert record.uncollected() == [] and (run / "produced" / "p2.jsonl").exists()
    assert record.incomplete() == [
        f"collected.jsonl: the files in {lost.folder} on {lost.host.name} were lost before they came back"
    ]  # so the verifier refuses the record


def test_unreachable_bootstrap_is_a_clear_error_within_the_timeout(tmp_path):
    cfg = process_config(bootstrap_timeout_ms=3000, producer_id="p1", dc=None, run_dir=str(tmp_path))
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.validation.producer", "--config", json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "no broker reachable at 127.0.0.1:1" in res.stderr
    assert time.monotonic() - t0 < 20


def test_bad_workload_input_is_refused(lab):
    with pytest.raises(ValueError, match="valid hosts: c1.dc-a.lab, c2.dc-b.lab"):
        wl.WorkloadSpec(hosts=["dc-z"]).validate(lab)
    with pytest.raises(ValueError, match="rate must be a finite number > 0"):
        wl.WorkloadSpec(rate=-5).validate(lab)
    with pytest.raises(ValueError, match="record_size must be a finite number > 0"):
        wl.WorkloadSpec(record_size=0).validate(lab)
    with pytest.raises(ValueError, match="batch_size must be a finite number > 0"):
        wl.WorkloadSpec(batch_size=0).validate(lab)
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
    proc = subprocess.Popen(
        DCDRILL
        + [
            "workload",
            "run",
            "--duration",
            "20",
            "--producers",
            "2",
            "--consumers",
            "1",
            "--rate",
            "300",
            "--topic",
            "dcdrill-it-killed-producer",
            "--run-dir",
            str(run),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 90
    victim = []
    while time.monotonic() < deadline and not victim:
        time.sleep(0.5)
        if _progress(run, "p1") > 500:
            victim = _workload_pids(run, "p1")
    assert victim, "producer p1 never got going"
    os.kill(victim[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    produced = rows(run, "produced")
    p1 = sorted(r["seq"] for r in produced if r["producer_id"] == "p1")
    assert p1 == list(range(len(p1)))
    recovered = [r for r in produced if r["producer_id"] == "p1" and "intent log" in (r["error"] or "")]
    assert recovered and all(r["status"] == "info" for r in recovered)
    res = subprocess.run(
        DCDRILL + ["verify", str(run), "--json", "--quiet"], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    counts = json.loads(res.stdout)["counts"]
    assert counts["phantoms"] == 0 and counts["acked_lost"] == 0 and counts["indeterminate"] >= len(recovered)
