"""What each file of a drill record holds (RECORD.md): the files' names, the faults faults.jsonl
may name, and the parsers and checks of the small files, which name the file, line and key of
what is wrong. Pure functions of bytes: DrillRecord (drill_record.py) does the reading."""

from __future__ import annotations

import json
import re

from dcdrill.record import models
from dcdrill.record.ledger import loads, parse
from dcdrill.record.models import (  # noqa: F401 - the names of faults, as the record's readers import them
    DEGRADE_LINK,
    FAULT_NAMES,
    ISOLATE_DC,
    KILL_DC,
    KILL_MIRROR,
    KILL_TIEBREAKER,
    MIRROR_EVENT_KINDS,
    POWER_LOSS,
    ROLLING_RESTART,
    STOP_DC,
    validated,
)

LEDGERS = ("produced", "audit", "consumed")


class BadRecord(ValueError):
    """The record cannot be verified as it is (exit 2): the message names the file, line and key."""


DC_LOSS_FAULTS = (KILL_DC, STOP_DC, KILL_TIEBREAKER, ISOLATE_DC, POWER_LOSS)

TOPOLOGY = "topology.json"
PLAN = "plan.json"  # the drill as `dcdrill drill` resolved it, `chaos run`'s var file
FAULTS = "faults.jsonl"
FAULT_STATE = "chaos-state.json"
EXPERIMENT = "experiment.json"
JOURNAL = "journal.json"
CHAOS_LOG = "chaos.log"
PHASES = "phases.json"
BASELINE = "baseline.json"
# Below this idle share the machine running the lab is saturated: its timings are CPU queues as
# much as Kafka's (a cold lab runs near none). The steady state calls such a baseline unsettled,
# and the report marks recovery times measured below it.
SATURATED_IDLE_PCT = 20
COORDINATION = "coordination.jsonl"
FAILOVERS = "failovers.jsonl"
MIRROR_WAITS = "mirror-waits.jsonl"
MIRROR_EVENTS = "mirror-events.jsonl"
CONVERGENCE = "convergence.json"  # a failed wait for the cluster: the causes read, and the logs kept
AUDIT_END = "audit-end.json"  # each audit ledger's length when its audit finished: a cut one is refused
AGENTS = "agents.jsonl"  # every process a drill started on a host: what heal stops after a crash
COLLECTED = "collected.jsonl"  # each client host's folder as it came back into the record
CLOCKS = "clocks.jsonl"  # each workload process's host clock against the control's, at start and end
# Fault times are the control's clock, send and ack times each client host's: a record whose
# host is surely further off than this (offset beyond it by more than half the round trip) is refused.
CLOCK_TOLERANCE_MS = 500
REPORT = "report"

# What a workload process writes in its folder on its client host, and so all the record takes
# back from there (infra/observe/hostaccess.fetch refuses a folder holding anything else).
AGENT_FOLDERS = ("produced", "intents", "transactions", "consumed", "events", "status", "audit")
AGENT_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=@-]{0,199}$")


def is_agent_file(path: str) -> bool:
    """`path` (relative to a host folder) is one of the agents' folders, a file directly in one
    of them or in logs/, or audit-end.json: never a file the control writes (chaos-state.json,
    agents.jsonl, ...)."""
    parts = path.split("/")
    if parts == [AUDIT_END]:
        return True
    if parts[0] not in (*AGENT_FOLDERS, "logs"):
        return False
    return len(parts) == 1 or (len(parts) == 2 and bool(AGENT_FILE.match(parts[1])))


def _lines(model, data: bytes, name: str, what: str) -> list[dict]:
    """Each line of a small JSON Lines file of the record, held to its model (RECORD.md)."""
    return [validated(model, row, where) for where, row in _objects(data, name, what)]


def parse_faults(data: bytes, name: str) -> list[dict]:
    """faults.jsonl's bytes as one entry per fault (merge_faults). `name` is what errors call the
    file; a line that is not a fault (RECORD.md) raises ValueError naming the file and line."""
    faults = merge_faults(_lines(models.Fault, data, name, "a fault line"))
    for f in faults:
        if f.get("acted_ms") is not None and f.get("end_ms") is not None and f["acted_ms"] > f["end_ms"]:
            raise ValueError(
                f"{name}: {f['fault']} {f['target']} took effect (acted_ms {f['acted_ms']}) after it ended"
                f" (end_ms {f['end_ms']})"
            )
    return faults


def _objects(data: bytes, name: str, what: str):
    """(file:line, object) for each line of a small JSON Lines file of the record; blank lines and a
    torn last line are skipped, a malformed line or one that is not an object raises ValueError
    naming the file and line (`what` says what the line should have been)."""
    parse(data, name)  # malformed lines, named by line
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip() or (n == len(lines) and not data.endswith(b"\n") and not parses_as_json(raw)):
            continue  # blank, or a torn last line
        row, where = loads(raw), f"{name}:{n}"
        if not isinstance(row, dict):
            raise ValueError(f"{where}: {what} must be a JSON object, got {type(row).__name__}")
        yield where, row


def parses_as_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
        return True
    except ValueError:
        return False


def parse_failovers(data: bytes, name: str) -> list[dict]:
    """failovers.jsonl (RECORD.md), oldest first."""
    return sorted(_lines(models.Failover, data, name, "a failover"), key=lambda r: r["at_ms"])


def parse_transactions(data: bytes, name: str) -> list[dict]:
    """transactions/<producer>.jsonl (RECORD.md): one producer's transactions, by txn; they
    number 0, 1, 2, ... and their records follow each other from seq 0 on."""
    rows = sorted(_lines(models.Transaction, data, name, "a transaction"), key=lambda r: r["txn"])
    seq = 0
    for n, r in enumerate(rows):
        if r["txn"] != n or r["first_seq"] != seq:
            raise ValueError(
                f"{name}: transaction {r['txn']} (first seq {r['first_seq']}) breaks the run 0, 1, ... from seq 0"
            )
        seq += r["records"]
    if len({r["producer_id"] for r in rows}) > 1:
        raise ValueError(f"{name}: transactions of more than one producer")
    return rows


def check_audit_end(data, name: str) -> dict:
    """audit-end.json (RECORD.md): {ledger file name: {"rows": n, "bytes": n}}."""
    return validated(models.AuditEnds, data, name)


def parse_agents(data: bytes, name: str) -> list[dict]:
    """agents.jsonl (RECORD.md): {name, pid, host, folder, cluster, started_ms} per line."""
    return _lines(models.Agent, data, name, "an agent")


def parse_clocks(data: bytes, name: str) -> list[dict]:
    """clocks.jsonl (RECORD.md): {name, host, at: start|end, offset_ms, rtt_ms, at_ms} per line."""
    return _lines(models.Clock, data, name, "a clock reading")


def parse_collected(data: bytes, name: str) -> list[dict]:
    """collected.jsonl (RECORD.md): {host, folder, at_ms} per line."""
    return _lines(models.Collected, data, name, "a collection")


def parse_mirror_waits(data: bytes, name: str) -> list[dict]:
    """mirror-waits.jsonl (RECORD.md), by the time each copy caught up."""
    return sorted(_lines(models.MirrorWait, data, name, "a mirror wait"), key=lambda r: r["caught_up_ms"])


def parse_mirror_events(data: bytes, name: str) -> list[dict]:
    """mirror-events.jsonl (RECORD.md), oldest first."""
    return sorted(_lines(models.MirrorEvent, data, name, "a mirror event"), key=lambda r: r["at_ms"])


def parse_coordination(data: bytes, name: str) -> list[dict]:
    """coordination.jsonl's bytes as its samples, oldest first (RECORD.md). A line that is not a
    sample raises ValueError naming the file and line; a torn last line is skipped."""
    return sorted(_lines(models.CoordinationSample, data, name, "a coordination sample"), key=lambda r: r["at_ms"])


def check_baseline(data, name: str = BASELINE) -> dict:
    """baseline.json as the report reads it: the settled produce latency before the fault."""
    return validated(models.Baseline, data, name)


def experiment_name(experiment) -> str | None:
    """The name dcdrill composed experiment.json under (its `dcdrill` extension); None if none."""
    extensions = experiment.get("extensions") if isinstance(experiment, dict) else None
    for ext in extensions if isinstance(extensions, list) else ():
        if isinstance(ext, dict) and ext.get("name") == "dcdrill" and isinstance(ext.get("experiment"), str):
            return ext["experiment"]
    return None


def check_topology(data, name: str) -> dict:
    """topology.json as the verdict needs it; a missing or unknown profile (which would leave the
    verdict without its promise) or any wrong shape raises ValueError naming the key."""
    return validated(models.Topology, data, name)


def checked(check, data, name: str):
    """A parser's or checker's ValueError as the record's BadRecord."""
    try:
        return check(data, name)
    except BadRecord:
        raise
    except ValueError as exc:
        raise BadRecord(str(exc)) from None


def fault_key(f: dict) -> tuple:
    """What names one fault across faults.jsonl and the fault state: (fault, target, start_ms)."""
    return f.get("fault"), f.get("target"), f["start_ms"]


def merge_faults(rows: list[dict]) -> list[dict]:
    """A heal line completes the injection line of the same fault_key."""
    merged: dict[tuple, dict] = {}
    for f in rows:
        merged.setdefault(fault_key(f), {}).update({k: v for k, v in f.items() if v is not None})
    return sorted(merged.values(), key=lambda f: f["start_ms"])
