"""Hand-built drill records for the verifier's tests (the contract in RECORD.md)."""

from __future__ import annotations

import json
from pathlib import Path

TOPIC = "t"


def topology(profile="consistency-first", unclean=False) -> dict:
    return {
        "cluster": "test",
        "profile": profile,
        "replication_factor": 4,
        "min_insync_replicas": 3,
        "unclean_leader_election": unclean,
        "acks": "all",
        "datacenters": [{"name": "dc-a", "brokers": 2, "zookeepers": 1}],
    }


def p(pid, seq, status, partition, offset=None, ack_ms=None, dc="dc-a"):
    send = (ack_ms or 1000) - 10
    return {
        "producer_id": pid,
        "seq": seq,
        "topic": TOPIC,
        "partition": partition,
        "key": f"k{seq}",
        "send_ms": send,
        "status": status,
        "ack_ms": ack_ms,
        "offset": offset if status == "ok" else None,
        "error": None if status == "ok" else "x",
        "dc": dc,
    }


def a(partition, offset, pid, seq):
    return {"topic": TOPIC, "partition": partition, "offset": offset, "producer_id": pid, "seq": seq, "timestamp_ms": 1}


def c(partition, offset, pid, seq, cid="c1"):
    return {
        "consumer_id": cid,
        "group": "g",
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "producer_id": pid,
        "seq": seq,
        "consume_ms": 5000,
        "dc": "dc-b",
    }


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


def note_agents(run: Path) -> Path:
    """agents.jsonl as a drill writes it, naming the processes whose ledgers the record holds (a
    drill's record must name them: DrillRecord.incomplete)."""
    names = sorted(f.stem for kind in ("produced", "consumed") for f in (run / kind).glob("*.jsonl"))
    rows = [{"name": n, "pid": 7, "host": None, "folder": None, "cluster": None, "started_ms": 1} for n in names]
    rows.append({"name": "a", "pid": 7, "host": None, "folder": None, "cluster": None, "started_ms": 1})
    (run / "agents.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def note_plan(run: Path, experiment: str = "kill-dc", **settings) -> Path:
    """plan.json as `dcdrill drill` writes it before its experiment (a drill's record must hold it)."""
    from dcdrill.record import DrillRecord, models

    configuration = models.PlanConfiguration(stack="local", run_dir=str(run), hold_s=30.0, rate=200.0, keep_topic=False)
    plan = models.Plan(experiment=experiment, configuration=configuration, settings=models.DrillSettings(**settings))
    DrillRecord(run).write_plan(plan)
    return run


def anomalies(run: Path, unclean=True, profile="consistency-first") -> Path:
    """Every anomaly at once, with counts worked out by hand in tests/spark/test_checker.py."""
    P = [p("p1", i, "ok", 0, i, 1000 + 100 * i) for i in range(10)]  # p1/7..9 truncated away
    P += [p("p2", j, "ok", 0, 7 + j, 3000 + 100 * j) for j in range(3)]  # written after the unclean election
    P += [
        p("p3", 0, "ok", 1, 0, 1000),
        p("p3", 1, "info", 1, ack_ms=1050),  # p3/1 retried: twice in the log
        p("p3", 2, "ok", 1, 3, 1100),
        p("p3", 3, "ok", 1, 5, 1150),  # p3/3 acked at 5, but lives at 4
        p("p3", 4, "ok", 1, 5, 1200),
    ]
    P += [
        p("p4", 1, "ok", 1, 6, 1250),
        p("p4", 0, "ok", 1, 7, 1300),  # reordered in the log
        p("p4", 2, "fail", 1, ack_ms=1350),
        p("p4", 3, "fail", 1, ack_ms=1400),
        p("p4", 4, "info", 1, ack_ms=1450),
    ]
    A = [a(0, i, "p1", i) for i in range(7)] + [a(0, 7 + j, "p2", j) for j in range(3)]
    log1 = [
        ("p3", 0),
        ("p3", 1),
        ("p3", 1),
        ("p3", 2),
        ("p3", 3),
        ("p3", 4),
        ("p4", 1),
        ("p4", 0),
        ("ghost", 0),
        ("p4", 2),
    ]
    A += [a(1, o, pid, s) for o, (pid, s) in enumerate(log1)]
    C = [c(0, i, "p1", i) for i in range(10)]  # saw the old log at 7..9
    C += [c(1, 0, "p3", 0)] + [c(1, o, pid, s) for o, (pid, s) in enumerate(log1)]  # offset 0 redelivered
    faults = [{"fault": "kill-dc", "target": "dc-a", "start_ms": 1500, "end_ms": 2500}]
    return write(
        run, P, A, C, faults, topology(profile, unclean), tails={"consumed/c1.jsonl": '{"consumer_id": "c1", "gro'}
    )


def random_record(run: Path, seed: int, interleaved: bool = False) -> Path:
    """A drill record with every kind of anomaly drawn at random (RECORD.md's contract kept: one
    produced row per record, one audit row per position, ok rows with an offset): loss, duplicates
    in the log and in delivery, reordering, divergent and mismatched positions, phantoms, failed and
    indeterminate sends that were or were not written, torn last lines, several producers and
    partitions, zero to two faults. `interleaved`: laid out as a drill writes (issue 71): up to
    six producers of up to 800 records each sending all the time, so each partition's log
    interleaves them, with up to about 5 % of each kind of anomaly."""
    import random

    rng = random.Random(seed)
    topics = ["t"] if rng.random() < 0.7 else ["t", "u"]
    parts = [(tp, i) for tp in topics for i in range(rng.randint(1, 4))]
    log: dict[tuple, list] = {tp: [] for tp in parts}  # the log before loss: identities in offset order
    produced = []
    t0 = 1_700_000_000_000
    # How often something goes wrong in this record (a fraction of it for most kinds, see below).
    anomaly = rng.choice([0.015, 0.05, 0.15] if interleaved else [0.0, 0.02, 0.1, 0.3])
    for pid, seq, topic, part, send in _sends(rng, parts, t0, interleaved):
        status = rng.choices(["ok", "fail", "info"], [0.8, 0.1, 0.1])[0] if rng.random() < anomaly * 3 else "ok"
        offset = None
        written = status == "ok" or (status == "info" and rng.random() < 0.5) or rng.random() < anomaly / 4
        if written:
            offset = len(log[(topic, part)])
            log[(topic, part)].append((pid, seq))
            if rng.random() < anomaly / 2:  # a retry written twice
                log[(topic, part)].append((pid, seq))
        ack = send + rng.randint(1, 3000 if rng.random() < anomaly else 40)
        if status == "ok" and rng.random() < anomaly / 3:  # acknowledged at another offset
            offset = rng.randint(0, len(log[(topic, part)]))
        produced.append(
            {
                "producer_id": pid,
                "seq": seq,
                "topic": topic,
                "partition": part,
                "key": f"k{seq}",
                "send_ms": send,
                "status": status,
                "ack_ms": ack if status != "info" or rng.random() < 0.5 else None,
                "offset": offset if status == "ok" else None,
                "error": None if status == "ok" else "x",
                "dc": rng.choice(["dc-a", "dc-b", None]),
            }
        )
    audit, consumed = [], []
    for (topic, part), entries in log.items():
        entries = list(entries)
        ghosts = rng.randint(0, 3) + (int(len(entries) * anomaly / 3) if interleaved else 0) if anomaly else 0
        for _ in range(ghosts):  # phantoms: records nobody produced
            entries.insert(rng.randint(0, len(entries)), (f"ghost{rng.randint(0, 2)}", rng.randint(0, 9)))
        for i in range(len(entries) - 1):  # reordering within the log
            if rng.random() < anomaly / 3:
                if interleaved:  # written a few sends late: after its producer's next records, often
                    entries.insert(min(len(entries) - 1, i + rng.randint(1, 20)), entries.pop(i))
                else:
                    entries[i], entries[i + 1] = entries[i + 1], entries[i]
        start = rng.randint(0, 3) if rng.random() < anomaly else 0  # a truncated log start
        for off, (pid, seq) in enumerate(entries):
            lost = off < start or rng.random() < anomaly / 5
            if not lost:
                audit.append(a(part, off, pid, seq) | {"topic": topic})
            if rng.random() < 0.95:  # delivered (records later lost included: the consumer saw them first)
                for _ in range(2 if rng.random() < anomaly / 2 else 1):
                    consumed.append(c(part, off, pid, seq, cid=rng.choice(["c1", "c2"])) | {"topic": topic})
        if rng.random() < anomaly:  # delivered from an old log: a position the audit holds otherwise, or not at all
            pid, seq = rng.choice(entries) if entries else ("p0", 0)
            consumed.append(c(part, len(entries) + rng.randint(-2, 3), pid, seq) | {"topic": topic})
    faults = []
    for i in range(rng.randint(0, 2)):
        start = t0 + rng.randint(0, 2000) + 3000 * i
        faults.append(
            {"fault": "kill-dc", "target": f"dc-{'ab'[i]}", "start_ms": start, "end_ms": start + rng.randint(100, 2000)}
        )
    tails = {}
    for rel in ("produced/p0.jsonl", "consumed/c1.jsonl", "audit/audit.jsonl"):
        if rng.random() < anomaly:
            tails[rel] = '{"producer_id": "p0", "se'  # a crash mid-write
    write(run, produced, audit, consumed, faults, topology(unclean=rng.random() < 0.5), tails=tails)
    for rel, torn in tails.items():  # a file holding nothing but the torn line: its ledger had no row there
        if (run / rel).read_text() == torn:
            (run / rel).unlink()
    return run


def _sends(rng, parts: list, t0: int, interleaved: bool):
    """(producer, seq, topic, partition, send_ms) of each record, in the order they reach the log:
    one producer after another, or (`interleaved`) every producer at its own pace, merged by send
    time. Drawn as they are consumed, so the first layout's records stay the ones they were."""
    if not interleaved:
        for n in range(rng.randint(1, 5)):
            for seq in range(rng.randint(1, 200)):
                topic, part = rng.choice(parts)
                yield f"p{n}", seq, topic, part, t0 + seq * rng.randint(1, 30) + rng.randint(0, 5)
        return
    sends = []
    for n in range(rng.randint(2, 6)):
        pace = rng.randint(1, 9)
        for seq in range(rng.randint(64, 800)):
            sends.append((t0 + seq * pace + rng.randint(0, 5), f"p{n}", seq, *rng.choice(parts)))
    for send, pid, seq, topic, part in sorted(sends, key=lambda s: s[:3]):
        yield pid, seq, topic, part, send


def verified(location: str, **kwargs) -> tuple[int, dict]:
    """(exit code, summary) of one record's verify, the code as `dcdrill verify` exits with it."""
    from dcdrill.exits import verdict_code
    from dcdrill.spark import verify

    summary = verify.verify(location, **kwargs)
    return verdict_code(summary), summary
