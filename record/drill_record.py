"""Paths, writers and readers of one drill record (RECORD.md documents each file).

A record is a local folder, or one behind a Hadoop URI (s3a://...) that the verifier reads:
DrillRecord names every file and reads them through a RecordFiles (record/files.py), so the
same parsing and the same errors serve both. The workload, the faults and the drill write local
records only.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from dcdrill.infra.constants import PROFILES, now_ms
from dcdrill.record.files import LOCAL, RecordFiles, is_remote
from dcdrill.record.ledger import Ledger, parse, recover_in_flight

LEDGERS = ("produced", "audit", "consumed")


class BadRecord(ValueError):
    """The record cannot be verified as it is (exit 2): the message names the file, line and key."""

# The faults faults.jsonl names (RECORD.md); the losses of a whole DC have a prediction to check.
KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER = "kill-dc", "stop-dc", "isolate-dc", "kill-tiebreaker"
DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR = "degrade-link", "rolling-restart", "kill-mirror"
DC_LOSS_FAULTS = (KILL_DC, STOP_DC, KILL_TIEBREAKER, ISOLATE_DC)

TOPOLOGY = "topology.json"
SETTINGS = "settings.json"
FAULTS = "faults.jsonl"
FAULT_STATE = "chaos-state.json"
EXPERIMENT = "experiment.json"
JOURNAL = "journal.json"
CHAOS_LOG = "chaos.log"
PHASES = "phases.json"
BASELINE = "baseline.json"
COORDINATION = "coordination.jsonl"
FAILOVERS = "failovers.jsonl"
MIRROR_WAITS = "mirror-waits.jsonl"
MIRROR_EVENTS = "mirror-events.jsonl"
MIRROR_EVENT_KINDS = ("start", "rebalance")
REPORT = "report"


FAULT_NAMES = (KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER, DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR)


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
            raise ValueError(f"{where}: end_ms must be null or a whole number >= start_ms ({f['start_ms']}), got {end!r}")
        isr = f.get("isr_at_start")
        if isr is not None and not (isinstance(isr, dict) and _whole(isr.get("partitions")) and _whole(isr.get("in_sync"))
                                    and isr["in_sync"] <= isr["partitions"]):
            raise ValueError(f"{where}: isr_at_start must be {{partitions, in_sync}} with in_sync <= partitions, got {isr!r}")
        rows.append(f)
    return merge_faults(rows)


def _objects(data: bytes, name: str, what: str):
    """(file:line, object) for each line of a small JSON Lines file of the record; blank lines and a
    torn last line are skipped, a malformed line or one that is not an object raises ValueError
    naming the file and line (`what` says what the line should have been)."""
    parse(data, name)  # malformed lines, named by line
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip() or (n == len(lines) and not data.endswith(b"\n") and not _parses(raw)):
            continue  # blank, or a torn last line
        row, where = json.loads(raw), f"{name}:{n}"
        if not isinstance(row, dict):
            raise ValueError(f"{where}: {what} must be a JSON object, got {type(row).__name__}")
        yield where, row


def _parses(raw: bytes) -> bool:
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
                raise ValueError(f"{where}: {key} must be {'a string' if kind is str else 'an integer'}, "
                                 f"got {row.get(key)!r}")
        rows.append(row)
    return sorted(rows, key=lambda r: r["at_ms"])


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
        rows.append(row)
    return sorted(rows, key=lambda r: r["at_ms"])


# topology.json: the keys the verdict and the report read, and their types (RECORD.md). The
# verdict cannot do without the first two; the others are checked where present.
TOPOLOGY_REQUIRED = ("profile", "unclean_leader_election")
TOPOLOGY_KEYS = {"stack": str, "profile": str, "unclean_leader_election": bool, "acks": str, "replication_factor": int,
                 "min_insync_replicas": int, "datacenters": list, "predictions": dict}
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
            raise ValueError(f"{name}: {key} must be {'a positive whole number' if typ is int else typ.__name__}, "
                             f"got {value!r}")
    if data["profile"] not in PROFILES:
        raise ValueError(f"{name}: profile {data['profile']!r} is not one of {', '.join(PROFILES)}: "
                         "without it there is no promise to check")
    for dc, p in (data.get("predictions") or {}).items():
        if not isinstance(p, dict) or any(not isinstance(p.get(k), bool) for k in PREDICTION_KEYS):
            raise ValueError(f"{name}: predictions.{dc} must have {', '.join(PREDICTION_KEYS)} as true/false")
    return data


def _checked(check, data, name: str):
    """A parser's or checker's ValueError as the record's BadRecord."""
    try:
        return check(data, name)
    except BadRecord:
        raise
    except ValueError as exc:
        raise BadRecord(str(exc)) from None


def merge_faults(rows: list[dict]) -> list[dict]:
    """A heal line completes the injection line of the same (fault, target, start_ms)."""
    merged: dict[tuple, dict] = {}
    for f in rows:
        key = (f.get("fault"), f.get("target"), f["start_ms"])
        merged.setdefault(key, {}).update({k: v for k, v in f.items() if v is not None})
    return sorted(merged.values(), key=lambda f: f["start_ms"])


class DrillRecord:
    """One drill record directory, runs/<drill-id>: a Path here, or a Hadoop URI string (read
    through `files`, the verifier's)."""

    def __init__(self, location: str | Path, files: RecordFiles = LOCAL):
        location = str(location).removeprefix("file://")  # a local URI is a local folder
        self.remote = is_remote(location)
        self.location = location.rstrip("/") if self.remote else str(Path(location))
        self.files = files

    @property
    def path(self) -> Path:
        if self.remote:
            raise ValueError(f"{self.location}: a remote record has no local path")
        return Path(self.location)

    def __repr__(self) -> str:
        return f"DrillRecord({self.location!r})"

    def uri(self, *names: str) -> str:
        """A file or folder of the record as the string Spark and the RecordFiles take."""
        return "/".join([self.location, *names]) if self.remote else str(self.path.joinpath(*names))

    @property
    def name(self) -> str:
        """What the report calls the record: its folder's name, or a remote record's whole URI."""
        return self.location if self.remote else self.path.name

    def exists(self) -> bool:
        return self.files.is_dir(self.location)

    # -- what the verifier reads, local or remote (BadRecord names the file) ---------------------
    def ledger_files(self, kind: str) -> tuple[list[str], str]:
        """(files, format) of one ledger folder: all .parquet or all .jsonl."""
        folder = self.uri(self.ledger_dir_name(kind))
        names = self.files.listdir(folder)
        if names is None:
            raise BadRecord(f"{folder}: ledger folder missing")
        parquet = [n for n in names if n.endswith(".parquet")]
        jsonl = [n for n in names if n.endswith(".jsonl")]
        if parquet and jsonl:
            raise BadRecord(f"{folder}: mixes .parquet and .jsonl ledgers")
        return (parquet, "parquet") if parquet else (jsonl, "jsonl")

    def torn_last_line(self, path: str) -> bool:
        """A last line without its newline that does not parse: what a crash mid-write leaves."""
        tail = self.files.read_tail(path, 65536)
        if not tail or tail.endswith(b"\n"):
            return False
        return not _parses(tail.rsplit(b"\n", 1)[-1])

    def read_file(self, path: str) -> bytes:
        """A file of the record by its full path (a ledger file, to name a bad line in it)."""
        return self.files.read_bytes(path) or b""

    def read_document(self, name: str, required: bool = True):
        """A JSON file of the record; missing: None, or BadRecord when `required`."""
        path = self.uri(name)
        data = self.files.read_bytes(path)
        if data is None:
            if required:
                raise BadRecord(f"{path}: missing")
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise BadRecord(f"{path}: not valid JSON ({exc})") from None

    def topology(self) -> dict:
        """topology.json, checked as the verdict needs it (check_topology)."""
        return _checked(check_topology, self.read_document(TOPOLOGY), self.uri(TOPOLOGY))

    def experiment_name(self) -> str | None:
        """The name of the experiment that made the record (experiment.json); None without one."""
        return experiment_name(self.read_document(EXPERIMENT, required=False))

    def baseline(self) -> dict | None:
        """baseline.json (the produce latency settled before the fault); missing: None."""
        data = self.read_document(BASELINE, required=False)
        return None if data is None else _checked(check_baseline, data, self.uri(BASELINE))

    def _lines(self, name: str, parser) -> list[dict] | None:
        path = self.uri(name)
        data = self.files.read_bytes(path)
        return None if data is None else _checked(parser, data, path)

    def coordination(self) -> list[dict]:
        """coordination.jsonl's samples, oldest first; missing: none."""
        return self._lines(COORDINATION, parse_coordination) or []

    def failovers(self) -> list[dict]:
        """failovers.jsonl, oldest first; missing: none."""
        return self._lines(FAILOVERS, parse_failovers) or []

    def mirror_waits(self) -> list[dict]:
        """mirror-waits.jsonl, by when each copy caught up; missing: none."""
        return self._lines(MIRROR_WAITS, parse_mirror_waits) or []

    def mirror_events(self) -> list[dict] | None:
        """mirror-events.jsonl, oldest first; None when the record has none (a drill that did not
        read MM2's log), which is not "no event"."""
        return self._lines(MIRROR_EVENTS, parse_mirror_events)

    # -- the ledgers (one file per producer / consumer, JSON Lines or Parquet) -------------------
    @staticmethod
    def ledger_dir_name(kind: str) -> str:
        if kind not in LEDGERS:
            raise ValueError(f"unknown ledger {kind!r}; valid: {', '.join(LEDGERS)}")
        return kind

    def ledger_dir(self, kind: str) -> Path:
        return self.path / self.ledger_dir_name(kind)

    def produced(self, producer_id: str) -> Path:
        return self.ledger_dir("produced") / f"{producer_id}.jsonl"

    def intents(self, producer_id: str) -> Path:
        """A producer's intent log (record/ledger.py IntentLog): what it may have sent."""
        return self.path / "intents" / f"{producer_id}.jsonl"

    def recover_in_flight(self, producer_id: str) -> int:
        """Info rows for what a producer reserved and never wrote an outcome for (after it ended)."""
        return recover_in_flight(self.produced(producer_id), self.intents(producer_id))

    def consumed(self, consumer_id: str) -> Path:
        return self.ledger_dir("consumed") / f"{consumer_id}.jsonl"

    def audit(self, cluster: str | None = None) -> Path:
        """The audit of the only cluster, or on a replicated stack of one cluster (RECORD.md)."""
        return self.ledger_dir("audit") / f"{cluster or 'audit'}.jsonl"

    def events(self, consumer_id: str) -> Path:
        return self.path / "events" / f"{consumer_id}.jsonl"

    # -- what the workload keeps beside the record: progress snapshots and process logs ----------
    def status(self, name: str) -> Path:
        return self.path / "status" / f"{name}.json"

    def status_dir(self) -> Path:
        return self.path / "status"

    def log(self, name: str) -> Path:
        return self.path / "logs" / f"{name}.log"

    # -- files of the drill itself --------------------------------------------------------------
    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def report_dir(self) -> Path:
        return self.path / REPORT

    def unsafe_paths(self) -> list[str]:
        """What a verifier must refuse before reading or writing: a symlink anywhere in the record
        that leads outside it (a ledger read from elsewhere), and a report/ that is a symlink or
        not a folder (the report would be written wherever it points)."""
        root = self.path.resolve()
        out = []
        for path in sorted(self.path.rglob("*")):
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                out.append(f"{path}: a symlink leading outside the record ({path.resolve()})")
        report = self.report_dir
        if report.is_symlink():
            out.append(f"{report}: is a symlink; the report is written only inside the record")
        elif report.exists() and not report.is_dir():
            out.append(f"{report}: exists and is not a folder")
        return out

    def write_report_file(self, name: str, text: str) -> str:
        """A file of report/: the verifier's report, or junit.xml when a drill stops before a verdict."""
        path = self.uri(REPORT, name)
        self.files.write_bytes(path, text.encode())
        return path

    def write_json(self, name: str, data) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.file(name)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return path

    def read_json(self, name: str, default=None):
        path = self.file(name)
        return json.loads(path.read_text()) if path.exists() else default

    def write_topology(self, resolved: dict) -> None:
        """topology.json: infra.stack.drill_topology's, written once before the workload starts."""
        self.write_json(TOPOLOGY, resolved)

    def has_topology(self) -> bool:
        return self.file(TOPOLOGY).is_file()

    def write_settings(self, settings: dict) -> None:
        """The drill's own settings (`dcdrill drill --acks ...`), read back inside the experiment."""
        self.write_json(SETTINGS, settings)

    def settings(self) -> dict:
        return self.read_json(SETTINGS, {})

    # -- faults ------------------------------------------------------------------------------------
    def append_fault(self, entry: dict) -> None:
        with Ledger(self.file(FAULTS)) as out:
            out.write(entry)

    def fault_started(self, fault: str, target: str, **extra) -> dict:
        """A fault line at injection (end_ms null); `extra`: what the fault adds (isr_at_start)."""
        entry = {"fault": fault, "target": target, "start_ms": now_ms(), "end_ms": None,
                 **{k: v for k, v in extra.items() if v is not None}}
        self.append_fault(entry)
        return entry

    def fault_ended(self, started: dict) -> dict:
        entry = {k: started[k] for k in ("fault", "target", "start_ms")} | {"end_ms": now_ms()}
        self.append_fault(entry)
        return entry

    def faults(self) -> list[dict]:
        """faults.jsonl, one entry per fault (merge_faults); missing: no fault."""
        return self._lines(FAULTS, parse_faults) or []

    @contextmanager
    def fault_state(self):
        """What is broken right now ({"active": [fault line + "undo"]}), so heal restores exactly
        that. Held under a lock; written atomically (temporary file, fsync, rename), so a crash
        leaves the old state or the new one, never a torn file."""
        path = self.file(FAULT_STATE)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(path.read_text()) if path.exists() else {"active": []}
            yield state
            tmp = path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                f.write(json.dumps(state, indent=2, sort_keys=True))
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(path)

    def active_faults(self) -> list[dict]:
        return (self.read_json(FAULT_STATE) or {}).get("active") or []

    # -- the coordination log: the quorum's leader and the live brokers, every second or so ------
    def append_failover(self, entry: dict) -> None:
        """One consumer-group failover (RECORD.md): {group, from, to, at_ms, topic, consumers}."""
        with open(self.file(FAILOVERS), "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


    def append_mirror_wait(self, entry: dict) -> None:
        """One flow's wait for its copy to catch up (RECORD.md): {flow, began_ms, caught_up_ms}."""
        with open(self.file(MIRROR_WAITS), "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


    def write_mirror_events(self, rows: list[dict]) -> None:
        """MirrorMaker 2's starts and rebalances during the drill (RECORD.md): {host, flows, event, at_ms}."""
        with open(self.file(MIRROR_EVENTS), "w") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in rows)

    def coordination_log(self) -> Path:
        return self.file(COORDINATION)


    # -- Chaos Toolkit's files ----------------------------------------------------------------------
    def journal(self) -> dict | None:
        return self.read_json(JOURNAL)
