"""What each file of a drill record holds (RECORD.md): the files' names, the faults faults.jsonl
may name, and the parsers and checks of the small files, which name the file, line and key of
what is wrong. Pure functions of bytes: DrillRecord (drill_record.py) does the reading."""

from __future__ import annotations

import json
import re

from dcdrill.infra.constants import PROFILES
from dcdrill.record.ledger import loads, parse

LEDGERS = ("produced", "audit", "consumed")


class BadRecord(ValueError):
    """The record cannot be verified as it is (exit 2): the message names the file, line and key."""


# The faults faults.jsonl names (RECORD.md); the losses of a whole DC have a prediction to check.
KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER = "kill-dc", "stop-dc", "isolate-dc", "kill-tiebreaker"
DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR = "degrade-link", "rolling-restart", "kill-mirror"
POWER_LOSS = "power-loss"  # kill-dc, and every write the DC's disks had not made durable is gone
DC_LOSS_FAULTS = (KILL_DC, STOP_DC, KILL_TIEBREAKER, ISOLATE_DC, POWER_LOSS)

TOPOLOGY = "topology.json"
SETTINGS = "settings.json"
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
MIRROR_EVENT_KINDS = ("start", "rebalance")
REPORT = "report"

# What a workload process writes in its folder on its client host, and so all the record takes
# back from there (infra/observe/hostaccess.fetch refuses a folder holding anything else).
AGENT_FOLDERS = ("produced", "intents", "consumed", "events", "status", "audit")
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


FAULT_NAMES = (KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER, DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR, POWER_LOSS)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_faults(data: bytes, name: str) -> list[dict]:
    """faults.jsonl's bytes as one entry per fault (merge_faults). `name` is what errors call the
    file; a line that is not a fault (RECORD.md) raises ValueError naming the file and line."""
    rows = []
    for where, f in _objects(data, name, "a fault line"):
        if f.get("fault") not in FAULT_NAMES:
            raise ValueError(f"{where}: fault {f.get('fault')!r} is not one of {', '.join(FAULT_NAMES)}")
        if not isinstance(f.get("target"), str) or not f["target"]:
            raise ValueError(f"{where}: target must be a non-empty string, got {f.get('target')!r}")
        if not _whole(f.get("start_ms")):
            raise ValueError(f"{where}: start_ms must be a whole number of ms >= 0, got {f.get('start_ms')!r}")
        end = f.get("end_ms")
        if end is not None and (not _whole(end) or end < f["start_ms"]):
            raise ValueError(
                f"{where}: end_ms must be null or a whole number >= start_ms ({f['start_ms']}), got {end!r}"
            )
        _check_isr(f.get("isr_at_start"), where, "isr_at_start")
        rows.append(f)
    return merge_faults(rows)


def _check_isr(isr, where: str, key: str) -> None:
    """A drill topic's ISR count ({partitions, in_sync}), or null."""
    if isr is not None and not (
        isinstance(isr, dict)
        and _whole(isr.get("partitions"))
        and _whole(isr.get("in_sync"))
        and isr["in_sync"] <= isr["partitions"]
    ):
        raise ValueError(f"{where}: {key} must be {{partitions, in_sync}} with in_sync <= partitions, got {isr!r}")


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
    """failovers.jsonl (RECORD.md): each line {group, from, to, at_ms, ...}; a bad one raises
    ValueError naming the file, line and key."""
    rows = []
    for where, row in _objects(data, name, "a failover"):
        for key, kind in (("group", str), ("from", str), ("to", str), ("at_ms", int)):
            if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                raise ValueError(
                    f"{where}: {key} must be {'a string' if kind is str else 'an integer'}, got {row.get(key)!r}"
                )
        rows.append(row)
    return sorted(rows, key=lambda r: r["at_ms"])


def check_audit_end(data, name: str) -> dict:
    """audit-end.json (RECORD.md): {ledger file name: {"rows": n, "bytes": n}}."""
    if not isinstance(data, dict):
        raise ValueError(f"{name}: must be an object of audit ledger files, got {type(data).__name__}")
    for file, end in data.items():
        if not (isinstance(end, dict) and all(_whole(end.get(k)) and end[k] >= 0 for k in ("rows", "bytes"))):
            raise ValueError(f"{name}: {file} must be {{rows, bytes}} as whole numbers >= 0, got {end!r}")
    return data


def parse_agents(data: bytes, name: str) -> list[dict]:
    """agents.jsonl (RECORD.md): {name, pid, host, folder, cluster, started_ms} per line, named when bad."""
    rows = []
    for where, row in _objects(data, name, "an agent"):
        if not isinstance(row.get("name"), str):
            raise ValueError(f"{where}: name must be a string, got {row.get('name')!r}")
        for key in ("pid", "started_ms"):
            if not _whole(row.get(key)) or row[key] <= 0:
                raise ValueError(f"{where}: {key} must be a positive integer, got {row.get(key)!r}")
        if row.get("folder") is not None and not isinstance(row.get("host"), str):
            raise ValueError(f"{where}: an agent with a folder names its host, got {row.get('host')!r}")
        rows.append(row)
    return rows


def parse_clocks(data: bytes, name: str) -> list[dict]:
    """clocks.jsonl (RECORD.md): {name, host, at: start|end, offset_ms, rtt_ms, at_ms} per line."""
    rows = []
    for where, row in _objects(data, name, "a clock reading"):
        for key in ("name", "host"):
            if not isinstance(row.get(key), str):
                raise ValueError(f"{where}: {key} must be a string, got {row.get(key)!r}")
        if row.get("at") not in ("start", "end"):
            raise ValueError(f"{where}: at must be start or end, got {row.get('at')!r}")
        offset = row.get("offset_ms")
        if not isinstance(offset, int) or isinstance(offset, bool):  # either sign: the host's clock minus the control's
            raise ValueError(f"{where}: offset_ms must be an integer, got {offset!r}")
        for key in ("rtt_ms", "at_ms"):
            if not _whole(row.get(key)):
                raise ValueError(f"{where}: {key} must be a whole number, got {row.get(key)!r}")
        rows.append(row)
    return rows


def parse_collected(data: bytes, name: str) -> list[dict]:
    """collected.jsonl (RECORD.md): {host, folder, at_ms} per line, named when bad."""
    rows = []
    for where, row in _objects(data, name, "a collection"):
        for key in ("host", "folder"):
            if not isinstance(row.get(key), str):
                raise ValueError(f"{where}: {key} must be a string, got {row.get(key)!r}")
        if not _whole(row.get("at_ms")):
            raise ValueError(f"{where}: at_ms must be a whole number, got {row.get('at_ms')!r}")
        rows.append(row)
    return rows


def parse_mirror_waits(data: bytes, name: str) -> list[dict]:
    """mirror-waits.jsonl (RECORD.md): {flow, began_ms, caught_up_ms} per line, named when bad."""
    rows = []
    for where, row in _objects(data, name, "a mirror wait"):
        if not isinstance(row.get("flow"), str):
            raise ValueError(f"{where}: flow must be a string, got {row.get('flow')!r}")
        for key in ("began_ms", "caught_up_ms"):
            if not _whole(row.get(key)):
                raise ValueError(f"{where}: {key} must be an integer, got {row.get(key)!r}")
        rows.append(row)
    return sorted(rows, key=lambda r: r["caught_up_ms"])


def parse_mirror_events(data: bytes, name: str) -> list[dict]:
    """mirror-events.jsonl (RECORD.md): {host, flows, event, at_ms} per line, named when bad."""
    rows = []
    for where, row in _objects(data, name, "a mirror event"):
        if not isinstance(row.get("host"), str):
            raise ValueError(f"{where}: host must be a string, got {row.get('host')!r}")
        if not isinstance(row.get("flows"), list) or not all(isinstance(f, str) for f in row["flows"]):
            raise ValueError(f"{where}: flows must be a list of flow names, got {row.get('flows')!r}")
        if row.get("event") not in MIRROR_EVENT_KINDS:
            raise ValueError(f"{where}: event must be one of {', '.join(MIRROR_EVENT_KINDS)}, got {row.get('event')!r}")
        if not _whole(row.get("at_ms")):
            raise ValueError(f"{where}: at_ms must be an integer, got {row.get('at_ms')!r}")
        rows.append(row)
    return sorted(rows, key=lambda r: r["at_ms"])


def parse_coordination(data: bytes, name: str) -> list[dict]:
    """coordination.jsonl's bytes as its samples, oldest first (RECORD.md). A line that is not a
    sample raises ValueError naming the file and line; a torn last line is skipped."""
    rows = []
    for where, row in _objects(data, name, "a coordination sample"):
        if not _whole(row.get("at_ms")):
            raise ValueError(f"{where}: at_ms must be a whole number of ms >= 0, got {row.get('at_ms')!r}")
        if row.get("leader") is not None and not isinstance(row["leader"], str):
            raise ValueError(f"{where}: leader must be a host name or null, got {row['leader']!r}")
        brokers = row.get("brokers")
        if brokers is not None and not (isinstance(brokers, list) and all(_whole(b) for b in brokers)):
            raise ValueError(f"{where}: brokers must be a list of broker ids or null, got {brokers!r}")
        for key in ("answered", "quorum"):
            if not isinstance(row.get(key, True), bool):
                raise ValueError(f"{where}: {key} must be true or false, got {row[key]!r}")
        for key in ("epoch", "serving", "total", "controller"):
            if row.get(key) is not None and not (_whole(row[key]) or (key == "controller" and row[key] == -1)):
                raise ValueError(f"{where}: {key} must be a whole number or null, got {row[key]!r}")
        _check_isr(row.get("isr"), where, "isr")
        rows.append(row)
    return sorted(rows, key=lambda r: r["at_ms"])


# topology.json: the keys the verdict and the report read, and their types (RECORD.md). The
# verdict cannot do without the first two; the others are checked where present.
TOPOLOGY_REQUIRED = ("profile", "unclean_leader_election")
TOPOLOGY_KEYS = {
    "stack": str,
    "profile": str,
    "unclean_leader_election": bool,
    "acks": str,
    "replication_factor": int,
    "min_insync_replicas": int,
    "datacenters": list,
    "predictions": dict,
}
PREDICTION_KEYS = ("quorum_survives", "writable", "acked_loss_possible")


def check_baseline(data, name: str = BASELINE) -> dict:
    """baseline.json as the report reads it: the settled produce latency before the fault."""
    if not isinstance(data, dict):
        raise ValueError(f"{name}: must be a JSON object, not {type(data).__name__}")
    for key in ("p50_ms", "p99_ms"):
        v = data.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise ValueError(f"{name}: {key} must be a number >= 0 or null (got {v!r})")
    if not isinstance(data.get("settled"), bool):
        raise ValueError(f"{name}: settled must be true or false (got {data.get('settled')!r})")
    idle = data.get("machine_idle_pct")
    if idle is not None and (isinstance(idle, bool) or not isinstance(idle, (int, float)) or not 0 <= idle <= 100):
        raise ValueError(f"{name}: machine_idle_pct must be a number from 0 to 100 or null (got {idle!r})")
    if data.get("cause") is not None and not isinstance(data.get("cause"), str):
        raise ValueError(f"{name}: cause must be text or null (got {data.get('cause')!r})")
    return data


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
    if not isinstance(data, dict):
        raise ValueError(f"{name}: must be a JSON object, got {type(data).__name__}")
    for key, typ in TOPOLOGY_KEYS.items():
        value = data.get(key)
        if value is None and key not in TOPOLOGY_REQUIRED:
            continue
        if not isinstance(value, typ) or (typ is int and (isinstance(value, bool) or value < 1)):
            raise ValueError(
                f"{name}: {key} must be {'a positive whole number' if typ is int else typ.__name__}, got {value!r}"
            )
    if data["profile"] not in PROFILES:
        raise ValueError(
            f"{name}: profile {data['profile']!r} is not one of {', '.join(PROFILES)}: "
            "without it there is no promise to check"
        )
    for dc, p in (data.get("predictions") or {}).items():
        if not isinstance(p, dict) or any(not isinstance(p.get(k), bool) for k in PREDICTION_KEYS):
            raise ValueError(f"{name}: predictions.{dc} must have {', '.join(PREDICTION_KEYS)} as true/false")
    mirrors = data.get("mirrors") or {}
    clusters = data.get("clusters") or {}
    if not isinstance(mirrors, dict) or not isinstance(clusters, dict):
        raise ValueError(f"{name}: mirrors and clusters must be objects keyed by name")
    for flow, m in mirrors.items():
        if not isinstance(m, dict):
            raise ValueError(f"{name}: mirrors.{flow} must be an object")
        for key in ("source", "target"):
            if m.get(key) not in clusters:
                raise ValueError(
                    f"{name}: mirrors.{flow}.{key}: cluster {m.get(key)!r} is not one of the record's "
                    f"clusters ({', '.join(clusters) or 'none'})"
                )
    return data


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
