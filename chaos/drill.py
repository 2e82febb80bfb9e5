"""What every activity shares: the stack it targets, the drill record it writes into, and the
fault state file that lets heal undo exactly what the faults did (and nothing else).

Configuration keys (experiment `configuration`, or `chaos run --var key=value`):
  stack     the Pulumi stack (default: local)
  run_dir   the drill record directory, runs/<drill-id>
A drill's own settings, where they differ from the stack's (`dcdrill drill --acks ...`), are in
run_dir/settings.json: a file, because `chaos run --var` only sets keys an experiment declares.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import re
import time
from contextlib import contextmanager
from pathlib import Path

from infra import lifecycle
from infra import stack as stacks
from validation.workload import append_fault


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def stack_name(configuration: dict | None) -> str:
    return (configuration or {}).get("stack", "local")


def run_dir(configuration: dict | None) -> Path:
    rd = (configuration or {}).get("run_dir")
    if not rd:
        raise ValueError("configuration.run_dir is required (the drill record directory)")
    return Path(rd)


SETTINGS_FILE = "settings.json"


def topology(configuration: dict | None):
    """The stack's topology, under the drill's own settings if run_dir/settings.json has some."""
    t = stacks.load(stack_name(configuration))
    rd = (configuration or {}).get("run_dir")
    settings = Path(rd) / SETTINGS_FILE if rd else None
    return t.with_settings(json.loads(settings.read_text())) if settings and settings.exists() else t


def inventory(configuration: dict | None) -> dict:
    return lifecycle.inventory(stack_name(configuration))


def drill_topic(configuration) -> str:
    """A fresh topic per drill: the audit then reads this drill's records and nothing older. The
    record folder's name, plus a digest of its whole path: the drills of two series share names
    (drill-1, ...), and a --matrix series has a drill-1 per setting."""
    rd = run_dir(configuration).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]", "-", rd.name)[:200]  # what Kafka allows in a topic name
    return f"dcdrill-{name}-{hashlib.sha1(str(rd).encode()).hexdigest()[:8]}"


def isr_snapshot(configuration) -> dict | None:
    """How many of the drill topic's partitions had every replica in sync, taken just before a
    fault. The topology's predictions assume all of them had: a replica already out of sync in
    the DC that survives can stop writes the model says continue. None when nobody answered."""
    from infra import status

    try:
        st = status.cluster_status(inventory(configuration), timeout_s=3.0)
    except Exception:  # noqa: BLE001 - a missing snapshot must not stop the fault
        return None
    parts = [p for p in st["partitions"] if p["topic"] == drill_topic(configuration)]
    if not parts:
        return None
    return {"partitions": len(parts), "in_sync": sum(len(p["isr"]) == len(p["replicas"]) for p in parts)}


def hosts_in_dc(inv: dict, dc: str, roles=("zookeeper", "kafka_broker")) -> list[tuple[str, str, dict]]:
    """(role, host name, host vars) of one DC, ZooKeeper first (heal starts them first)."""
    out = []
    for role in roles:
        for name, hv in sorted(inv["all"]["children"][role]["hosts"].items()):
            if hv["dc"] == dc:
                out.append((role, name, hv))
    return out


def check_dc(configuration: dict | None, dc: str) -> None:
    names = topology(configuration).dc_names
    if dc not in names:
        raise ValueError(f"unknown DC {dc!r}; valid: {', '.join(names)}")


# -- fault state: what is broken right now, so heal restores exactly that ---------------------------
def _state_path(configuration) -> Path:
    return run_dir(configuration) / "chaos-state.json"


@contextmanager
def fault_state(configuration):
    path = _state_path(configuration)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(path.read_text()) if path.exists() else {"active": []}
        yield state
        path.write_text(json.dumps(state, indent=2, sort_keys=True))


def record_start(configuration, fault: str, target: str, undo: dict, isr: dict | None = None) -> dict:
    """Append the fault to faults.jsonl and remember how to undo it. `isr`: isr_snapshot(), taken
    before the fault, recorded with it."""
    entry = {"fault": fault, "target": target, "start_ms": now_ms(), "end_ms": None}
    if isr is not None:
        entry["isr_at_start"] = isr
    append_fault(run_dir(configuration), entry)
    with fault_state(configuration) as state:
        state["active"].append({**entry, "undo": undo})
    return entry


def record_end(configuration, active: dict) -> dict:
    entry = {k: active[k] for k in ("fault", "target", "start_ms")} | {"end_ms": now_ms()}
    append_fault(run_dir(configuration), entry)
    return entry


def heal(configuration, dc: str | None, undo) -> dict:
    """Undo every recorded fault of `dc` (or all) with the driver's `undo(record, configuration)`;
    keeps healing the rest when one fails, then raises naming what could not be healed."""
    healed, errors = [], []
    with fault_state(configuration) as state:
        keep = []
        for active in state["active"]:
            if dc and active["target"] != dc and not active["target"].startswith(f"{dc}<->"):
                keep.append(active)
                continue
            try:
                undo(active["undo"], configuration)
                healed.append(record_end(configuration, active))
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{active['fault']} {active['target']}: {exc}")
                keep.append(active)
        state["active"] = keep
    if errors:
        raise RuntimeError("heal failed: " + "; ".join(errors))
    return {"healed": healed}
