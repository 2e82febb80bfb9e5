"""Paths, writers and readers of one drill record (RECORD.md documents each file).

The verifier also reads records that live in S3: it fetches a file's bytes through Spark
(spark/storage.py) and parses them with the same functions as here (parse_faults, ledger.parse).
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from infra.constants import now_ms
from record.ledger import Ledger, parse

LEDGERS = ("produced", "audit", "consumed")

# The faults faults.jsonl names (RECORD.md); the losses of a whole DC have a prediction to check.
KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER = "kill-dc", "stop-dc", "isolate-dc", "kill-tiebreaker"
DEGRADE_LINK, ROLLING_RESTART = "degrade-link", "rolling-restart"
DC_LOSS_FAULTS = (KILL_DC, STOP_DC, KILL_TIEBREAKER, ISOLATE_DC)

TOPOLOGY = "topology.json"
SETTINGS = "settings.json"
FAULTS = "faults.jsonl"
FAULT_STATE = "chaos-state.json"
EXPERIMENT = "experiment.json"
JOURNAL = "journal.json"
CHAOS_LOG = "chaos.log"
PHASES = "phases.json"
REPORT = "report"


def parse_faults(data: bytes, name: str) -> list[dict]:
    """faults.jsonl's bytes as one entry per fault (merge_faults). `name` is what errors call the
    file; a line that is not a fault raises ValueError naming it."""
    rows, _ = parse(data, name)
    for i, f in enumerate(rows, 1):
        if not isinstance(f, dict) or "start_ms" not in f:
            raise ValueError(f"{name}: fault {i} has no start_ms: {f}")
    return merge_faults(rows)


def merge_faults(rows: list[dict]) -> list[dict]:
    """A heal line completes the injection line of the same (fault, target, start_ms)."""
    merged: dict[tuple, dict] = {}
    for f in rows:
        key = (f.get("fault"), f.get("target"), f["start_ms"])
        merged.setdefault(key, {}).update({k: v for k, v in f.items() if v is not None})
    return sorted(merged.values(), key=lambda f: f["start_ms"])


class DrillRecord:
    """One drill record directory, runs/<drill-id>."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"DrillRecord({str(self.path)!r})"

    # -- the ledgers (one file per producer / consumer, JSON Lines or Parquet) -------------------
    def ledger_dir(self, kind: str) -> Path:
        if kind not in LEDGERS:
            raise ValueError(f"unknown ledger {kind!r}; valid: {', '.join(LEDGERS)}")
        return self.path / kind

    def produced(self, producer_id: str) -> Path:
        return self.ledger_dir("produced") / f"{producer_id}.jsonl"

    def consumed(self, consumer_id: str) -> Path:
        return self.ledger_dir("consumed") / f"{consumer_id}.jsonl"

    def audit(self) -> Path:
        return self.ledger_dir("audit") / "audit.jsonl"

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

    def write_json(self, name: str, data) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.file(name)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return path

    def read_json(self, name: str, default=None):
        path = self.file(name)
        return json.loads(path.read_text()) if path.exists() else default

    def write_topology(self, resolved: dict) -> None:
        """The resolved stack (infra.rules.resolved), under the drill's own settings if any."""
        self.write_json(TOPOLOGY, resolved)

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
        path = self.file(FAULTS)
        return parse_faults(path.read_bytes(), str(path)) if path.exists() else []

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

    # -- Chaos Toolkit's files ----------------------------------------------------------------------
    def journal(self) -> dict | None:
        return self.read_json(JOURNAL)
