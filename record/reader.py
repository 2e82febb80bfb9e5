"""A drill record as its readers see it: the verifier, the history, and the completeness and
trust checks heal and the drill make. A record is a local folder, or one behind a Hadoop URI
(s3a://...) read through a RecordFiles (record/files.py), so the same parsing and the same errors
serve both. Every small file is held to its model (record/models.py); DrillRecord
(drill_record.py) adds the writers the control and the workload use.
"""

from __future__ import annotations

import json
from pathlib import Path

from dcdrill.record import models
from dcdrill.record.contents import (
    AGENTS,
    AUDIT_END,
    BASELINE,
    CLOCK_TOLERANCE_MS,
    CLOCKS,
    COLLECTED,
    COORDINATION,
    EXPERIMENT,
    FAILOVERS,
    FAULT_NAMES,
    FAULT_STATE,
    FAULTS,
    JOURNAL,
    LEDGERS,
    MIRROR_EVENTS,
    MIRROR_WAITS,
    PLAN,
    REPORT,
    TOPOLOGY,
    BadRecord,
    check_audit_end,
    check_baseline,
    check_topology,
    checked,
    experiment_name,
    parse_agents,
    parse_clocks,
    parse_collected,
    parse_coordination,
    parse_failovers,
    parse_faults,
    parse_mirror_events,
    parse_mirror_waits,
    parse_transactions,
    parses_as_json,
)
from dcdrill.record.files import LOCAL, RecordFiles, is_remote
from dcdrill.record.ledger import in_flight, loads


def _ends_with_sent(intents: bytes) -> bool:
    """An intent log whose last line is its `sent` count: the producer stopped cleanly."""
    try:
        last = loads(intents.rstrip(b"\n").rsplit(b"\n", 1)[-1])
    except ValueError:
        return False
    return isinstance(last, dict) and set(last) == {"sent"}


class RecordReader:
    """One drill record directory, runs/<drill-id>, read: a Path here, or a Hadoop URI string
    (read through `files`, the verifier's)."""

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
        return f"{type(self).__name__}({self.location!r})"

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
        return not parses_as_json(tail.rsplit(b"\n", 1)[-1])

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
            return loads(data)
        except ValueError as exc:
            raise BadRecord(f"{path}: not valid JSON ({exc})") from None

    def topology(self) -> dict:
        """topology.json, checked as the verdict needs it (check_topology)."""
        return checked(check_topology, self.read_document(TOPOLOGY), self.uri(TOPOLOGY))

    def experiment_name(self) -> str | None:
        """The name of the experiment that made the record (experiment.json); None without one."""
        return experiment_name(self.read_document(EXPERIMENT, required=False))

    def baseline(self) -> dict | None:
        """baseline.json (the produce latency settled before the fault); missing: None."""
        data = self.read_document(BASELINE, required=False)
        return None if data is None else checked(check_baseline, data, self.uri(BASELINE))

    def _lines(self, name: str, parser) -> list[dict] | None:
        path = self.uri(name)
        data = self.files.read_bytes(path)
        return None if data is None else checked(parser, data, path)

    def incomplete(self) -> list[str]:
        """Why the record does not hold a whole drill (empty: it does). A drill that crashed
        halfway leaves a fault that never ended, a fault state still listing one, no journal
        after its experiment, an interrupted journal, or an audit shorter than when it finished.
        A workload process's files that never came back from its client host, or were lost there,
        make it incomplete too. Such a record is refused (exit 2), never verified as passing: its
        ledgers stop at the crash."""
        out = [
            f"{FAULTS}: {f['fault']} {f['target']} has no end (never healed: `dcdrill heal`)"
            for f in self.faults()
            if f.get("end_ms") is None
        ]
        if active := self.active_faults():
            out.append(f"{FAULT_STATE}: still lists {len(active)} fault(s) as active")
        journal = self.read_document(JOURNAL, required=False)
        if journal is None and self.files.read_bytes(self.uri(EXPERIMENT)) is not None:
            out.append(f"{EXPERIMENT} is there and {JOURNAL} is not: chaos run never finished")
        elif isinstance(journal, dict) and journal.get("status") in ("interrupted", "aborted"):
            out.append(f"{JOURNAL}: the experiment was {journal['status']}")
        ends = self.read_document(AUDIT_END, required=False)
        if ends is None and journal is not None and self.files.listdir(self.uri("audit")):
            out.append(f"{AUDIT_END} is missing: the audit never finished")
        for file, end in (checked(check_audit_end, ends, self.uri(AUDIT_END)) if ends is not None else {}).items():
            size = self.files.size(self.uri("audit", file))
            if size is not None and size != end["bytes"]:
                out.append(f"{self.uri('audit', file)}: {size} bytes, {end['bytes']} when the audit finished")
        out += [
            f"{AGENTS}: {a['name']}'s files on {a['host']} never came back ({a['folder']}; `dcdrill heal` collects "
            "them)"
            for a in self.uncollected()
        ]
        out += [
            f"{COLLECTED}: the files in {row['folder']} on {row['host']} were lost before they came back"
            for row in self._lines(COLLECTED, parse_collected) or []
            if row.get("lost")
        ]
        return out + self._manifest_gaps(journal)

    def clock_problems(self, tolerance_ms: int = CLOCK_TOLERANCE_MS) -> list[str]:
        """The client hosts whose clock was surely more than `tolerance_ms` off the control's: the
        record's send and ack times could not be set against its fault times."""
        return [
            f"{CLOCKS}: {c['host']}'s clock was {c['offset_ms']:+d} ms off the control's at {c['name']}'s {c['at']} "
            f"(round trip {c['rtt_ms']} ms; tolerance {tolerance_ms} ms): set the hosts' clocks by NTP"
            for c in self.clocks()
            if abs(c["offset_ms"]) - c["rtt_ms"] / 2 > tolerance_ms
        ]

    def clocks(self) -> list[dict]:
        """clocks.jsonl: each workload process's host clock against the control's."""
        return self._lines(CLOCKS, parse_clocks) or []

    def _manifest_gaps(self, journal) -> list[str]:
        """What a drill started and its record lacks. A drill (experiment.json and its journal) must
        name what it started (agents.jsonl), and hold each producer's, consumer's and audit's ledger
        and a fault line for every fault its journal says ran: a record with those files deleted is
        refused, never verified as a drill that lost or injected nothing."""
        if not isinstance(journal, dict) or self.files.read_bytes(self.uri(EXPERIMENT)) is None:
            return []
        out = []
        plan, name = self.plan(), self.experiment_name()
        if plan is None:
            out.append(f"{PLAN} is missing: what the drill ran, and with which settings, is unknown")
        elif name is not None and plan.experiment != name:
            out.append(f"{PLAN} names the experiment {plan.experiment}, {EXPERIMENT} {name}")
        agents = self._lines(AGENTS, parse_agents)
        if agents is None:
            out.append(f"{AGENTS} is missing: which producers, consumers and audits the drill started is unknown")
        held = {kind: self._ledger_names(kind) for kind in LEDGERS}
        for a in agents or []:
            name = a["name"]
            if name == "a":  # audit/audit.*, or on a replicated stack audit/<cluster>.*
                kind, wanted = "audit", {"audit", a.get("cluster")} - {None}
            elif name[:1] in ("p", "c") and name[1:].isdigit():
                kind, wanted = ("produced" if name[0] == "p" else "consumed"), {name}
            else:
                continue  # the experiment itself
            if not wanted & held[kind]:
                out.append(
                    f"{self.uri(kind, min(wanted))}.jsonl (or .parquet): missing, though {AGENTS} says {name} ran"
                )
        ran = sorted(
            {
                r["activity"]["provider"]["func"].replace("_", "-")
                for r in journal.get("run", [])
                if isinstance(r, dict)
                and r.get("status") == "succeeded"
                and isinstance((r.get("activity") or {}).get("provider"), dict)
                and str(r["activity"]["provider"].get("func", "")).replace("_", "-") in FAULT_NAMES
            }
        )
        recorded = {f["fault"] for f in self.faults()}
        out += [f"{FAULTS}: no {fault} line, though {JOURNAL} says it ran" for fault in ran if fault not in recorded]
        return out

    def _ledger_names(self, kind: str) -> set[str]:
        """The ledger files of one folder, by name without their .jsonl or .parquet."""
        names = self.files.listdir(self.uri(self.ledger_dir_name(kind))) or []
        return {n.rsplit("/", 1)[-1].rsplit(".", 1)[0] for n in names if n.endswith((".jsonl", ".parquet"))}

    def coordination(self) -> list[dict]:
        """coordination.jsonl's samples, oldest first; missing: none."""
        return self._lines(COORDINATION, parse_coordination) or []

    def transactions_ended(self) -> list[dict]:
        """Every transactional producer's transactions (transactions/*.jsonl); none: no transactions."""
        out = []
        for path in self.files.listdir(self.uri("transactions")) or []:  # full paths, sorted
            if path.endswith(".jsonl"):
                out += self._lines(f"transactions/{path.rsplit('/', 1)[-1]}", parse_transactions) or []
        return out

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

    def in_flight_rows(self) -> list[dict]:
        """The info rows the intent logs of producers that never stopped cleanly imply (ledger.in_flight):
        what the verifier adds to the produced ledger, so a killed workload's records in flight are
        indeterminate whether or not anything recovered them. A producer whose log ends with its
        `sent` count stopped cleanly, and its stop wrote them."""
        out = []
        for path in self.files.listdir(self.uri("intents")) or []:
            name = path.rsplit("/", 1)[-1]
            if not name.endswith(".jsonl"):
                continue
            intents = self.files.read_bytes(path) or b""
            if _ends_with_sent(intents):
                continue
            ledger = self.files.read_bytes(self.uri("produced", name)) or b""
            try:
                out += in_flight(ledger, intents, path)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise BadRecord(f"{path}: not an intent log ({type(exc).__name__}: {exc})") from None
        return out

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

    def read_json(self, name: str, default=None):
        path = self.file(name)
        if not path.exists():
            return default
        try:
            return json.loads(path.read_bytes())
        except ValueError as exc:  # a torn or tampered state file: named, never a traceback
            raise BadRecord(f"{path}: not JSON ({exc})") from None

    def plan(self) -> models.Plan | None:
        """plan.json held to its model; None in a record of a plain `chaos run`, which has none."""
        data = self.read_document(PLAN, required=False)
        if data is None:
            return None
        return checked(lambda d, name: models.parsed(models.Plan, d, name), data, self.uri(PLAN))

    def fault_state_now(self) -> dict:
        """chaos-state.json held to its model (record/models.FaultState), keys as written; with no
        file, no active fault. A garbled one is a BadRecord naming the file and key: heal and the
        verifier refuse it rather than read a fault into it or out of it."""
        data = self.read_document(FAULT_STATE, required=False)
        if data is None:
            return {"active": []}
        return checked(lambda d, name: models.validated(models.FaultState, d, name), data, self.uri(FAULT_STATE))

    def active_faults(self) -> list[dict]:
        return self.fault_state_now()["active"]

    def settings(self) -> dict:
        """The drill's own settings (plan.json's), as Topology.with_settings() takes them."""
        plan = self.plan()
        return {} if plan is None else plan.settings.model_dump(exclude_none=True)

    def faults(self) -> list[dict]:
        """faults.jsonl, one entry per fault (merge_faults); missing: no fault."""
        return self._lines(FAULTS, parse_faults) or []

    def agents(self) -> list[dict]:
        """agents.jsonl: every process noted (a torn last line is skipped: it was never started)."""
        return self._lines(AGENTS, parse_agents) or []

    def uncollected(self) -> list[dict]:
        """The noted workload processes whose host folder has not come back since they started."""
        done: dict[tuple, int] = {}
        for row in self._lines(COLLECTED, parse_collected) or []:
            key = (row["host"], row["folder"])
            done[key] = max(done.get(key, 0), row["at_ms"])
        return [
            a for a in self.agents() if a.get("folder") and done.get((a["host"], a["folder"]), -1) < a["started_ms"]
        ]

    # -- Chaos Toolkit's files ----------------------------------------------------------------------
    def journal(self) -> dict | None:
        return self.read_json(JOURNAL)
