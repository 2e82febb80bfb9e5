"""Healing after anything: the end of a drill, a rollback, or a crash of any of its processes.

Everything a drill changes is noted before it is changed: the record in the stack's open drills
(infra/observe/open_drills.py), each fault's undo in the record's fault state and in a copy the stack's
backend keeps away from the machine running the drill (the stack's bucket on AWS: `fault_state`),
each process it starts in the record's agents. `heal_stack` (`dcdrill heal`) reads those, stops
the drill's processes, undoes each fault still noted (from the copy when the record is gone with
its machine), then sweeps the live state for anything left (a DC still cut off, a link still
shaped). Every step is written as it is done, so a heal that is itself interrupted resumes where
it stopped; a second heal finds nothing to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import time
from pathlib import Path

from chaoslib.exceptions import ActivityFailed

from dcdrill.chaos import context
from dcdrill.chaos.faults import driver_class
from dcdrill.chaos.faults.driver import FaultDriver
from dcdrill.infra import ansible, inventory, lifecycle
from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import now_ms
from dcdrill.infra.observe import hostaccess, open_drills
from dcdrill.record import DrillRecord, models
from dcdrill.record.contents import AGENTS, FAULT_STATE, fault_key
from dcdrill.validation import workload as wl

AGENT_STOP_S = 10.0  # SIGTERM, then this long to finish what is in flight, then SIGKILL
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # a file name: the intents path takes it
KEPT_KEY = re.compile(models.KEPT_AS)  # kept_key's names: a folder of its own


class RecordRefused(ValueError):
    """A record (or a kept copy) names what the stack does not define: heal runs nothing (exit 2)."""


def stack_driver(stack: str, record: DrillRecord | None, secrets: dict | None = None) -> FaultDriver:
    """The fault driver of `stack`, under the drill's own settings in `record` (if any)."""
    backend = stacks.backend(stack)
    d = context.deployment_for(stack, record)
    if not d.replicated:
        drv = driver_class(backend)(d.home, lifecycle.inventory(stack), backend)
    else:
        every = [lifecycle.inventory(stack, name) for name in d.cluster_names]
        if d.mirrors:
            every.append(lifecycle.inventory(stack, ansible.MIRRORS))
        drv = driver_class(backend)(d, inventory.merged(every), backend)
    drv.credentials = {k: v for k, v in (secrets or {}).items() if v}
    return drv


def kept_key(record: DrillRecord) -> str:
    """The name of a drill's fault-state copy: its folder's name and a digest of its whole path."""
    path = str(record.path.resolve())
    name = re.sub(r"[^A-Za-z0-9._-]", "-", record.path.resolve().name)[:100]
    return f"{name}-{hashlib.sha1(path.encode()).hexdigest()[:8]}"


def _kept_as(record: DrillRecord) -> str:
    return record.fault_state_now().get("kept_as") or kept_key(record)


@contextlib.contextmanager
def fault_state(record: DrillRecord, d: FaultDriver):
    """record.fault_state(), then the same state kept by the stack's backend (a heal from another
    machine reads that copy). The record is written first: the copy is never ahead of it."""
    with record.fault_state() as state:
        yield state
        key = state.setdefault("kept_as", kept_key(record))  # a recovered record keeps its drill's
        snapshot = json.loads(json.dumps(state))
    d.backend.keep_fault_state(d.inventory, key, snapshot, d.credentials)


def refusals(stack: str, records: list[DrillRecord], kept: dict[str, dict]) -> list[str]:
    """What in the records heal would act on, and in the kept copies, the stack does not define:
    each fault's undo (the driver's undo_problems), each agent's name, host and folder (the one
    validation/workload.host_folder gives that host for that record), each kept copy's name. Empty:
    heal may go ahead. Read errors (a garbled file) are refusals too, named by file."""
    out: list[str] = []
    for record in records:
        try:
            out += _record_refusals(stack, record)
        except ValueError as exc:  # BadRecord: the file and line
            out.append(f"{record.path}: {exc}")
    driver = stack_driver(stack, None) if kept else None  # once: it loads the stack's inventory
    for key, state in kept.items():
        if not KEPT_KEY.match(key):
            out.append(f"the fault-state copy {key!r}: not a name dcdrill gives a copy")
            continue
        try:  # the same model as the record's own chaos-state.json
            models.validated(models.FaultState, state, f"the fault-state copy {key}")
        except ValueError as exc:
            out.append(str(exc))
            continue
        out += [
            f"the fault-state copy {key}: {a['fault']} {a['target']}: {p}"
            for a in state["active"]
            for p in driver.undo_problems(a["undo"])
        ]
    return out


def _record_refusals(stack: str, record: DrillRecord) -> list[str]:
    out = []
    if active := record.active_faults():  # held to record/models.FaultState: a BadRecord otherwise
        d = stack_driver(stack, record)
        out += [
            f"{record.file(FAULT_STATE)}: {a['fault']} {a['target']}: {p}"
            for a in active
            for p in d.undo_problems(a["undo"])
        ]
    clusters = set(context.deployment_for(stack, record).cluster_names)
    for agent in record.agents():
        where = f"{record.file(AGENTS)}: agent {agent.get('name')!r}"
        if not AGENT_NAME.match(agent["name"]):
            out.append(f"{where}: not a name dcdrill gives a process")
        if agent.get("folder") is None:
            continue
        if agent.get("cluster") is not None and agent["cluster"] not in clusters:
            out.append(f"{where}: cluster {agent['cluster']!r} is not one of stack {stack}'s")
            continue
        expected = _agent_folder(stack, record, agent)
        if agent["folder"] != expected:
            out.append(f"{where}: folder {agent['folder']!r} on {agent['host']} is not this drill's ({expected})")
    return out


def _agent_folder(stack: str, record: DrillRecord, agent: dict) -> str:
    """The folder a workload process of `record` keeps on its host: by the stack's inventory when
    it is up, else by its shape alone (an absolute path ending in the drill's own folder name)."""
    try:
        inv = lifecycle.inventory(stack, agent.get("cluster"))
    except lifecycle.NotUp:
        inv = None
    host = next((h for h in inv.hosts() if h.name == agent["host"]), None) if inv else None
    if inv is not None and host is None:
        return f"no folder: {agent['host']} is not a host of stack {stack}"
    if host is not None:
        return wl.host_folder(host, record)
    folder = str(agent["folder"])
    shaped = folder.startswith("/") and os.path.normpath(folder) == folder
    return folder if shaped and folder.endswith(f"/agents/{record.agent_key}") else f".../agents/{record.agent_key}"


def heal_record(stack: str, record: DrillRecord, dc: str | None = None, secrets: dict | None = None) -> list[dict]:
    """Undo every fault the record's fault state lists (of `dc`, or all), each exactly as its driver
    noted it, writing the state after each one. The fault lines of what was healed; ActivityFailed
    names what was not (the rest are still healed)."""
    if not record.active_faults():
        return []
    d = stack_driver(stack, record, secrets)
    healed, errors = [], []
    for active in record.active_faults():
        if dc and active["target"] != dc and not active["target"].startswith(f"{dc}<->"):
            continue
        began = now_ms()  # the fault ends when its undo begins (a restart waits for the service to stay up)
        try:
            d.undo(active["undo"])
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{active['fault']} {active['target']}: {exc}")
            continue
        with fault_state(record, d) as state:
            state["active"] = [a for a in state["active"] if fault_key(a) != fault_key(active)]
        healed.append(record.fault_ended(active, began))
    if errors:
        raise ActivityFailed("heal failed: " + "; ".join(errors))
    return healed


def running_agents(record: DrillRecord) -> list[dict]:
    """The record's noted processes still running here: the pid is alive and its command line
    names this record, or for a workload process's host-access session its folder (a pid the
    system gave to another process since is not ours)."""
    out = []
    for agent in record.agents():
        mark = (agent.get("folder") or str(record.path)).encode()
        try:
            cmdline = Path(f"/proc/{agent['pid']}/cmdline").read_bytes()
        except OSError:
            continue
        if mark in cmdline:
            out.append(agent)
    return out


def stop_agents(record: DrillRecord) -> list[str]:
    """Stop the record's processes still running here: SIGTERM, AGENT_STOP_S to finish, then
    SIGKILL. A workload process's session ending stops it on its host (validation/host_process).
    Returns what was stopped."""
    running = running_agents(record)
    for agent in running:
        _signal(agent["pid"], signal.SIGTERM)
    deadline = time.monotonic() + AGENT_STOP_S
    while running_agents(record) and time.monotonic() < deadline:
        time.sleep(0.2)
    for agent in running_agents(record):
        _signal(agent["pid"], signal.SIGKILL)
    return [f"{a['name']} (pid {a['pid']})" for a in running]


def collect_agents(stack: str, record: DrillRecord) -> list[str]:
    """What a crash left of the drill's workload on its client hosts: stop what still runs there
    (through host access), bring each host's folder into the record, then settle every producer's
    unsettled sends as info rows (its intent log), as a clean stop does. Returns what was collected."""
    done, seen = [], set()
    for agent in record.uncollected():
        key = (agent.get("cluster"), agent["host"], agent["folder"])
        if key in seen:
            continue
        seen.add(key)
        inv = lifecycle.inventory(stack, agent.get("cluster"))
        host = next((h for h in inv.hosts() if h.name == agent["host"]), None)
        if host is None:
            raise ActivityFailed(f"{agent['name']}'s host {agent['host']} is not in stack {stack}'s inventory")
        try:
            left = json.loads(
                hostaccess.run(inv, host, hostaccess.python_module(host, wl.RUNNER, "--stop", agent["folder"]))
            )
            if left["exists"]:
                wl.collect_folder(record, inv, host, agent["folder"])
            else:
                record.note_collected(agent["host"], agent["folder"], lost=True)
        except (hostaccess.HostUnreachable, hostaccess.AgentFailed, hostaccess.HostAccessUnavailable) as exc:
            raise ActivityFailed(f"the drill's files on {agent['host']} ({agent['folder']}): {exc}") from None
        done.append(f"{agent['host']}:{agent['folder']}")
    for agent in record.agents():
        if record.intents(agent["name"]).exists():
            record.recover_in_flight(agent["name"])
    return done


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def left_behind(stack: str) -> list[str]:
    """What earlier drills left on the stack: faults their records still list, processes still
    running, and what the live state shows (a DC cut off, a link shaped otherwise than configured).
    Records with nothing left are forgotten on the way."""
    out = []
    for location in open_drills.listed(stack):
        record = DrillRecord(location)
        here = (
            [f"{f['fault']} {f['target']} (noted in {location})" for f in record.active_faults()]
            + [f"{a['name']} still running (pid {a['pid']}, {location})" for a in running_agents(record)]
            + [f"{a['name']}'s files still on {a['host']} ({location})" for a in record.uncollected()]
        )
        if not here:
            open_drills.forget(stack, location)
        out += here
    out += [
        f"{a['fault']} {a['target']} (kept outside the record as {key})"
        for key, state in _kept(stack).items()
        for a in state["active"]
        if key not in {_kept_as(DrillRecord(loc)) for loc in open_drills.listed(stack)}
    ]
    return out + stacks.backend(stack).faults_in_place(stacks.load_deployment(stack))


def _kept(stack: str, secrets: dict | None = None) -> dict[str, dict]:
    """The backend's fault-state copies ({} for a stack that is not up: nothing to heal there)."""
    try:
        inv = lifecycle.inventory(stack)
    except lifecycle.NotUp:
        return {}
    return stacks.backend(stack).kept_fault_states(inv, secrets)


def recovered_record(stack: str, key: str, state: dict) -> DrillRecord:
    """A record for a drill known only from its kept copy (its own went with the machine that ran
    it): a folder beside the stack's inventory holding that fault state, which heal then works on."""
    record = DrillRecord(ansible.inventory_path(stack).parent / "recovered" / key)
    with record.fault_state() as local:
        if not local["active"]:
            local.update(active=state["active"], kept_as=key)
    return record


def require_healed(stack: str) -> None:
    """Refuse to start on a stack an earlier drill left broken (ValueError: exit 2)."""
    if found := left_behind(stack):
        raise ValueError(
            f"stack {stack} still has what an earlier drill left: {'; '.join(found)}. "
            f"Run `dcdrill heal --stack {stack}` first"
        )


def _heal_one(stack: str, record: DrillRecord, secrets: dict | None, where: str, say, done: list, errors: list) -> bool:
    """heal_record, each healed fault said and added to `done`; False (the error in `errors`) if one failed."""
    try:
        for line in heal_record(stack, record, secrets=secrets):
            say(f"healed {line['fault']} {line['target']} {where}")
            done.append(f"{line['fault']} {line['target']}")
    except ActivityFailed as exc:
        errors.append(str(exc))
        return False
    return True


def heal_stack(stack: str, only: DrillRecord | None = None, secrets: dict | None = None, say=print) -> list[str]:
    """`dcdrill heal`: every open drill of the stack (or `only`), then the live state. Each step is
    said as it is done. Returns what was undone (empty: nothing was left)."""
    done: list[str] = []
    records = [only] if only else [DrillRecord(loc) for loc in open_drills.listed(stack)]
    kept = {} if only else _kept(stack, secrets)
    if refused := refusals(stack, records, kept):
        raise RecordRefused(f"heal of stack {stack} refused, nothing was done: " + "; ".join(refused))
    errors = []
    for record in records:
        if stopped := stop_agents(record):
            say(f"stopped {', '.join(stopped)} of {record.path}")
            done += stopped
        if not _heal_one(stack, record, secrets, f"of {record.path}", say, done, errors):
            continue
        try:  # after the undo: an isolated DC's client host answers again
            if collected := collect_agents(stack, record):
                say(f"collected {', '.join(collected)} into {record.path}")
                done += collected
        except ActivityFailed as exc:
            errors.append(str(exc))
            continue
        open_drills.forget(stack, str(record.path.resolve()))
    for key, state in kept.items():
        _heal_one(
            stack,
            recovered_record(stack, key, state),
            secrets,
            f"(from the copy kept outside its record, {key})",
            say,
            done,
            errors,
        )
    for found in stacks.backend(stack).heal_in_place(stacks.load_deployment(stack)):
        say(f"healed in place: {found}")
        done.append(found)
    if errors:
        raise ActivityFailed("; ".join(errors))
    return done
