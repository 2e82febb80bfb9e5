"""A drill record as its writers see it: the control (the drill, the faults, heal) and the
workload write every file through DrillRecord, each small file held to its model
(record/models.py) before it is written. The record is always a local folder here; what
everyone reads is RecordReader's (reader.py).
"""

from __future__ import annotations

import fcntl
import json
from contextlib import contextmanager
from pathlib import Path

from dcdrill.infra.constants import now_ms, write_json_atomically, write_text_atomically
from dcdrill.record import models
from dcdrill.record.contents import (
    AGENTS,
    AUDIT_END,
    CLOCKS,
    COLLECTED,
    CONVERGENCE,
    COORDINATION,
    FAILOVERS,
    FAULT_STATE,
    FAULTS,
    MIRROR_EVENTS,
    MIRROR_WAITS,
    PLAN,
    TOPOLOGY,
    BadRecord,
)
from dcdrill.record.ledger import Ledger, recover_in_flight
from dcdrill.record.models import validated
from dcdrill.record.reader import RecordReader


class DrillRecord(RecordReader):
    """One local drill record directory, runs/<drill-id>, written."""

    def note_clock(self, name: str, host: str, at: str, offset_ms: int, rtt_ms: int) -> None:
        row = {"name": name, "host": host, "at": at, "offset_ms": offset_ms, "rtt_ms": rtt_ms, "at_ms": now_ms()}
        self._append(CLOCKS, models.Clock, row)

    def mark_audit_end(self, file: str, rows: int) -> None:
        """The audit of one ledger file finished: its rows and length, for `incomplete`."""
        ends = self.read_json(AUDIT_END, {})
        ends[file] = {"rows": rows, "bytes": (self.path / "audit" / file).stat().st_size}
        self.write_json(AUDIT_END, validated(models.AuditEnds, ends, AUDIT_END))

    def produced(self, producer_id: str) -> Path:
        return self.ledger_dir("produced") / f"{producer_id}.jsonl"

    def intents(self, producer_id: str) -> Path:
        """A producer's intent log (record/ledger.py IntentLog): what it may have sent."""
        return self.path / "intents" / f"{producer_id}.jsonl"

    def recover_in_flight(self, producer_id: str) -> int:
        """Info rows for what a producer reserved and never wrote an outcome for (after it ended)."""
        return recover_in_flight(self.produced(producer_id), self.intents(producer_id))

    def transaction_log(self, producer_id: str) -> Path:
        """A transactional producer's transactions, as each ended (models.Transaction)."""
        return self.path / "transactions" / f"{producer_id}.jsonl"

    def consumed(self, consumer_id: str) -> Path:
        return self.ledger_dir("consumed") / f"{consumer_id}.jsonl"

    def audit(self, cluster: str | None = None) -> Path:
        """The audit of the only cluster, or on a replicated stack of one cluster (RECORD.md)."""
        return self.ledger_dir("audit") / f"{cluster or 'audit'}.jsonl"

    def events(self, consumer_id: str) -> Path:
        return self.path / "events" / f"{consumer_id}.jsonl"

    # -- what the workload keeps beside the record: progress snapshots and process logs ----------
    @staticmethod
    def status_name(kind: str, process: str) -> str:
        """The status file's name of one process: producer-p1, consumer-c2."""
        return f"{kind}-{process}"

    def write_status(self, name: str, status: dict) -> None:
        """A process's progress snapshot, replaced whole (a reader never sees half of one)."""
        path = self.path / "status" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status))
        tmp.replace(path)

    def statuses(self) -> list[dict]:
        """Every process's latest snapshot, by name."""
        out = []
        for f in sorted((self.path / "status").glob("*.json")):
            try:
                out.append(json.loads(f.read_text()))
            except (OSError, ValueError):  # replaced while read
                pass
        return out

    def log(self, name: str) -> Path:
        return self.path / "logs" / f"{name}.log"

    def write_json(self, name: str, data) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.file(name)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return path

    def write_topology(self, resolved: dict) -> None:
        """topology.json: infra.stack.drill_topology's, written once before the workload starts."""
        self.write_json(TOPOLOGY, validated(models.Topology, resolved, TOPOLOGY))

    def has_topology(self) -> bool:
        return self.file(TOPOLOGY).is_file()

    def write_convergence(self, diagnosis: dict) -> None:
        """A failed wait's diagnosis (RECORD.md: convergence.json), replaced whole by a later one."""
        write_json_atomically(self.file(CONVERGENCE), diagnosis)

    def write_plan(self, plan: models.Plan) -> None:
        """plan.json, written once before the experiment starts (a drill record holds one drill)."""
        if self.file(PLAN).exists():
            raise BadRecord(f"{self.file(PLAN)}: this record already holds a drill's plan")
        self.write_json(PLAN, plan.as_json())

    # -- faults ------------------------------------------------------------------------------------
    def _append(self, name: str, model, row: dict) -> None:
        """One line of a small JSON Lines file, held to its model first (record/models.py) and
        appended as a ledger row is: flushed, fsync'd, a crash leaving at most a torn last line."""
        validated(model, row, name)
        with Ledger(self.file(name)) as out:
            out.write(row)

    def append_fault(self, entry: dict) -> None:
        self._append(FAULTS, models.Fault, entry)

    def fault_started(self, fault: str, target: str, **extra) -> dict:
        """A fault line at injection (end_ms null); `extra`: what the fault adds (isr_at_start)."""
        entry = {
            "fault": fault,
            "target": target,
            "start_ms": now_ms(),
            "end_ms": None,
            **{k: v for k, v in extra.items() if v is not None},
        }
        self.append_fault(entry)
        return entry

    def fault_acted(self, started: dict, acted_ms: int) -> dict:
        """The line saying when the fault took effect: once the driver returned, or when its
        backend says it did (FIS's action start). Never before the injection line."""
        entry = {k: started[k] for k in ("fault", "target", "start_ms")} | {
            "acted_ms": max(acted_ms, started["start_ms"])
        }
        self.append_fault(entry)
        return entry

    def fault_ended(self, started: dict, end_ms: int | None = None) -> dict:
        """The fault's end line: `end_ms` when heal began undoing it (default: now), and never
        before the record says it took effect (its acted_ms line, which FIS's clock may have set)."""
        key = {k: started[k] for k in ("fault", "target", "start_ms")}
        acted = next((f.get("acted_ms") for f in self.faults() if {k: f[k] for k in key} == key), None)
        entry = key | {"end_ms": max(end_ms or now_ms(), acted or 0)}
        self.append_fault(entry)
        return entry

    @contextmanager
    def fault_state(self):
        """What is broken right now ({"active": [fault line + "undo"]}), so heal restores exactly
        that. Held under a lock; written atomically (temporary file, fsync, rename), so a crash
        leaves the old state or the new one, never a torn file."""
        path = self.file(FAULT_STATE)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self.fault_state_now()
            yield state
            write_json_atomically(path, validated(models.FaultState, state, str(path)))

    # -- the drill's processes: heal stops whichever a crash left running ------------------------
    def note_agent(
        self, name: str, pid: int, host: str | None = None, folder: str | None = None, cluster: str | None = None
    ) -> None:
        """A process the drill started, noted as it starts: the experiment itself (`pid` its own),
        or a workload process on a client host (`pid` the control's host-access session to it,
        `folder` where it keeps its files on `host`, `cluster` the inventory that names the host).
        After a crash, heal stops what still runs and collects what was not collected."""
        row = {"name": name, "pid": pid, "host": host, "folder": folder, "cluster": cluster, "started_ms": now_ms()}
        self._append(AGENTS, models.Agent, row)

    @property
    def agent_key(self) -> str:
        """The name a drill's folders on its client hosts go by: the record's, made unique by
        where it is (two records may share a folder name)."""
        import hashlib

        where = str(self.path.resolve()) if not self.remote else self.location
        return f"{self.name}-{hashlib.sha1(where.encode()).hexdigest()[:10]}"

    def note_collected(self, host: str, folder: str, lost: bool = False) -> None:
        """A host's folder came back into the record (collected.jsonl); `lost`: it was gone from
        the host (the record then lacks what its processes wrote, and is incomplete)."""
        row = {"host": host, "folder": folder, "at_ms": now_ms(), **({"lost": True} if lost else {})}
        self._append(COLLECTED, models.Collected, row)

    # -- the coordination log: the quorum's leader and the live brokers, every second or so ------
    def append_failover(self, entry: dict) -> None:
        """One consumer-group failover (RECORD.md): {group, from, to, at_ms, topic, consumers}."""
        self._append(FAILOVERS, models.Failover, entry)

    def append_mirror_wait(self, entry: dict) -> None:
        """One flow's wait for its copy to catch up (RECORD.md): {flow, began_ms, caught_up_ms}."""
        self._append(MIRROR_WAITS, models.MirrorWait, entry)

    def write_mirror_events(self, rows: list[dict]) -> None:
        """MirrorMaker 2's starts and rebalances during the drill (RECORD.md): {host, flows, event, at_ms}."""
        for n, row in enumerate(rows, 1):
            validated(models.MirrorEvent, row, f"{MIRROR_EVENTS}:{n}")
        write_text_atomically(self.file(MIRROR_EVENTS), "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))

    def coordination_log(self) -> Path:
        return self.file(COORDINATION)
