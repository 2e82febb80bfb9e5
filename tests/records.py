"""Hand-built drill records for the verifier's tests (the contract in RECORD.md)."""
from __future__ import annotations

import json
from pathlib import Path

TOPIC = "t"


def topology(profile="consistency-first", unclean=False) -> dict:
    return {"cluster": "test", "profile": profile, "replication_factor": 4, "min_insync_replicas": 3,
            "unclean_leader_election": unclean, "acks": "all",
            "datacenters": [{"name": "dc-a", "brokers": 2, "zookeepers": 1}]}


def p(pid, seq, status, partition, offset=None, ack_ms=None, dc="dc-a"):
    send = (ack_ms or 1000) - 10
    return {"producer_id": pid, "seq": seq, "topic": TOPIC, "partition": partition, "key": f"k{seq}",
            "send_ms": send, "status": status, "ack_ms": ack_ms, "offset": offset if status == "ok" else None,
            "error": None if status == "ok" else "x", "dc": dc}


def a(partition, offset, pid, seq):
    return {"topic": TOPIC, "partition": partition, "offset": offset, "producer_id": pid, "seq": seq,
            "timestamp_ms": 1}


def c(partition, offset, pid, seq, cid="c1"):
    return {"consumer_id": cid, "group": "g", "topic": TOPIC, "partition": partition, "offset": offset,
            "producer_id": pid, "seq": seq, "consume_ms": 5000, "dc": "dc-b"}


def write(run: Path, produced, audit, consumed, faults=(), topo=None, tails: dict | None = None) -> Path:
    """tails: {"consumed/c1.jsonl": "raw text appended as-is"} for torn or malformed lines."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "topology.json").write_text(json.dumps(topo or topology()))
    for kind, rows in (("produced", produced), ("audit", audit), ("consumed", consumed)):
        (run / kind).mkdir(exist_ok=True)
        by_file: dict[str, list] = {}
        for r in rows:
            name = r.get("producer_id") if kind == "produced" else r.get("consumer_id", "audit")
            by_file.setdefault(f"{name}.jsonl", []).append(r)
        if not rows:
            continue
        for name, rs in by_file.items():
            (run / kind / name).write_text("".join(json.dumps(x) + "\n" for x in rs))
    (run / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    for rel, text in (tails or {}).items():
        with open(run / rel, "a") as f:
            f.write(text)
    return run


def anomalies(run: Path, unclean=True, profile="consistency-first") -> Path:
    """Every anomaly at once, with counts worked out by hand in tests/test_checker.py."""
    P = [p("p1", i, "ok", 0, i, 1000 + 100 * i) for i in range(10)]          # p1/7..9 truncated away
    P += [p("p2", j, "ok", 0, 7 + j, 3000 + 100 * j) for j in range(3)]        # written after the unclean election
    P += [p("p3", 0, "ok", 1, 0, 1000), p("p3", 1, "info", 1, ack_ms=1050),    # p3/1 retried: twice in the log
          p("p3", 2, "ok", 1, 3, 1100), p("p3", 3, "ok", 1, 5, 1150),          # p3/3 acked at 5, but lives at 4
          p("p3", 4, "ok", 1, 5, 1200)]
    P += [p("p4", 1, "ok", 1, 6, 1250), p("p4", 0, "ok", 1, 7, 1300),          # reordered in the log
          p("p4", 2, "fail", 1, ack_ms=1350), p("p4", 3, "fail", 1, ack_ms=1400), p("p4", 4, "info", 1, ack_ms=1450)]
    A = [a(0, i, "p1", i) for i in range(7)] + [a(0, 7 + j, "p2", j) for j in range(3)]
    log1 = [("p3", 0), ("p3", 1), ("p3", 1), ("p3", 2), ("p3", 3), ("p3", 4), ("p4", 1), ("p4", 0), ("ghost", 0), ("p4", 2)]
    A += [a(1, o, pid, s) for o, (pid, s) in enumerate(log1)]
    C = [c(0, i, "p1", i) for i in range(10)]                                  # saw the old log at 7..9
    C += [c(1, 0, "p3", 0)] + [c(1, o, pid, s) for o, (pid, s) in enumerate(log1)]  # offset 0 redelivered
    faults = [{"fault": "kill-dc", "target": "dc-a", "start_ms": 1500, "end_ms": 2500}]
    return write(run, P, A, C, faults, topology(profile, unclean),
                 tails={"consumed/c1.jsonl": '{"consumer_id": "c1", "gro'})
