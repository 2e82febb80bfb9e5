"""The fault actions every experiment names, on any backend: each records the fault in the drill
record (faults.jsonl, and the fault state heal reads), then asks the stack's fault driver
(chaos.faults.DRIVERS) to inject it. A fault that cannot be injected raises ActivityFailed, so a
plain `chaos run` fails too.

DC losses record the drill topic's ISR just before the fault (isr_at_start): the topology's
predictions assume every replica in sync, and the report says when some were not.
"""

from __future__ import annotations

from chaoslib.exceptions import ActivityFailed

from dcdrill.chaos import context
from dcdrill.chaos.faults import recovery
from dcdrill.chaos.faults.driver import HEAL_GRACE_S, FaultDriver, Undo
from dcdrill.chaos.kafka.actions import watched_isr
from dcdrill.chaos.kafka.probes import wait_converged
from dcdrill.infra import rules
from dcdrill.infra.constants import now_ms
from dcdrill.infra.observe import open_drills, status
from dcdrill.record import DrillRecord
from dcdrill.record.contents import (
    DEGRADE_LINK,
    ISOLATE_DC,
    KILL_DC,
    KILL_MIRROR,
    KILL_TIEBREAKER,
    POWER_LOSS,
    ROLLING_RESTART,
    STOP_DC,
    fault_key,
)

__all__ = [
    "kill_dc",
    "stop_dc",
    "power_loss",
    "isolate_dc",
    "kill_tiebreaker",
    "degrade_link",
    "rolling_restart",
    "kill_mirror",
    "heal",
]

# What each action needs from the driver: `dcdrill drill --check` checks the backend has it.
NEEDS = {
    "kill_dc": "kill_dc",
    "stop_dc": "stop_dc",
    "power_loss": "power_loss",
    "isolate_dc": "isolate_dc",
    "kill_tiebreaker": "kill_dc",
    "degrade_link": "degrade_link",
    "rolling_restart": "restart_broker",
    "kill_mirror": "kill_mirror",
    "heal": "undo",
}


def driver(configuration: dict | None, secrets: dict | None = None) -> FaultDriver:
    """The stack's fault driver; `secrets`: the experiment's `aws` secrets (the AWS driver's
    credentials; empty values leave boto3's own chain)."""
    rd = (configuration or {}).get("run_dir")  # a probe may ask with no drill record at all
    d = recovery.stack_driver(context.stack_name(configuration), DrillRecord(rd) if rd else None, secrets)
    hold = (configuration or {}).get("hold_s")
    if hold is not None:  # the drill heals after its hold: a backend that can, undoes the fault itself later
        d.fault_limit_s = float(hold) + HEAL_GRACE_S
    return d


# The coordination watch samples once a second; a sample this recent is "just before the fault".
ISR_SAMPLE_AGE_MS = 3_000


def isr_snapshot(configuration) -> dict | None:
    """How many of the drill topic's partitions had every replica in sync, just before a fault:
    the coordination watch's latest sample, else asked then (3 s at most on the way to the fault).
    None when nobody answered: a missing snapshot must not stop the fault."""
    if watched := watched_isr(configuration, ISR_SAMPLE_AGE_MS):
        return watched
    try:
        st = status.cluster_status(
            context.inventory(configuration), timeout_s=3.0, avoid_dcs=context.observers_avoid(configuration)
        )
    except Exception:  # noqa: BLE001
        return None
    parts = [p for p in st["partitions"] if p["topic"] == context.drill_topic(configuration)]
    if not parts:
        return None
    return {"partitions": len(parts), "in_sync": sum(len(p["isr"]) == len(p["replicas"]) for p in parts)}


def _inject(
    configuration, fault: str, target: str, act, dc_loss: bool = False, secrets: dict | None = None, acts=True
) -> dict:
    """Record the fault, then act(driver, undo); what the driver notes in `undo` is saved in the
    fault state as it goes, so heal undoes exactly what happened, even after a failure halfway.
    Once act returns, the fault took effect: at the `acted_ms` its backend reported (FIS's action
    start), else then. The verifier's windows start there (`acts`: False for a fault that is a
    series of steps, whose window starts at the first)."""
    record = context.record(configuration)
    d = driver(configuration, secrets)
    open_drills.note(context.stack_name(configuration), str(record.path.resolve()))  # before any change: heal finds it
    entry = record.fault_started(fault, target, isr_at_start=isr_snapshot(configuration) if dc_loss else None)
    with recovery.fault_state(record, d) as state:
        state["active"].append({**entry, "undo": {}})

    def save(data: dict) -> None:
        with recovery.fault_state(record, d) as state:
            for active in state["active"]:
                if fault_key(active) == fault_key(entry):
                    active["undo"] = data

    try:
        result = act(d, Undo(save))
    except Exception as exc:  # noqa: BLE001 - the rollbacks heal what was noted
        raise ActivityFailed(f"{fault} {target}: {type(exc).__name__}: {exc}") from exc
    reported = result.pop("acted_ms", None)
    if acts:
        entry = {**entry, "acted_ms": record.fault_acted(entry, reported or now_ms())["acted_ms"]}
    return {**entry, **result}


def kill_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Every Kafka process of the DC (brokers, KRaft controllers, ZooKeeper) dies at once (SIGKILL on
    the lab): the hosts keep what the processes wrote; `power_loss` takes what was not durable."""
    context.check_dc(configuration, dc)
    return _inject(configuration, KILL_DC, dc, lambda d, undo: d.kill_dc(dc, undo), dc_loss=True, secrets=secrets)


def stop_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Clean shutdown of every Kafka and ZooKeeper process of the DC, brokers first."""
    context.check_dc(configuration, dc)
    return _inject(configuration, STOP_DC, dc, lambda d, undo: d.stop_dc(dc, undo), dc_loss=True, secrets=secrets)


def power_loss(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """A real power loss: every Kafka process of the DC dies at once, and every write its hosts'
    disks had not made durable (fsync'd, or written back by the kernel) is gone with it."""
    context.check_dc(configuration, dc)
    return _inject(configuration, POWER_LOSS, dc, lambda d, undo: d.power_loss(dc, undo), dc_loss=True, secrets=secrets)


def kill_tiebreaker(configuration: dict = None, secrets: dict = None) -> dict:
    """Power loss of the DC that holds quorum voters (ZooKeeper nodes or KRaft controllers) but no brokers."""
    ties = rules.tiebreakers(context.topology(configuration))
    if not ties:
        raise ActivityFailed(
            f"stack {context.stack_name(configuration)} has no tiebreaker DC (quorum voters and no brokers)"
        )
    return _inject(
        configuration, KILL_TIEBREAKER, ties[0], lambda d, undo: d.kill_dc(ties[0], undo), dc_loss=True, secrets=secrets
    )


def isolate_dc(dc: str, direction: str = "both", configuration: dict = None, secrets: dict = None) -> dict:
    """Cut the DC off from the others: both directions, or only `ingress` (into the DC) / `egress`."""
    context.check_dc(configuration, dc)
    FaultDriver.check_direction(direction)
    return _inject(
        configuration, ISOLATE_DC, dc, lambda d, undo: d.isolate_dc(dc, direction, undo), dc_loss=True, secrets=secrets
    )


def degrade_link(
    dc: str,
    other_dc: str,
    latency_ms: float = 0,
    jitter_ms: float = 0,
    loss_pct: float = 0,
    configuration: dict = None,
    secrets: dict = None,
) -> dict:
    """Latency, jitter and packet loss between two DCs, both directions."""
    for d in (dc, other_dc):
        context.check_dc(configuration, d)
    return _inject(
        configuration,
        DEGRADE_LINK,
        f"{dc}<->{other_dc}",
        lambda d, undo: d.degrade_link(dc, other_dc, float(latency_ms), float(jitter_ms), float(loss_pct), undo),
        secrets=secrets,
    )


def rolling_restart(wait_timeout_s: float = 180, configuration: dict = None, secrets: dict = None) -> dict:
    """Restart the brokers one at a time, waiting for zero under-replicated partitions in between."""

    def restart_all(d: FaultDriver, undo: Undo) -> dict:
        for host in d.inventory.brokers:
            d.restart_broker(host)
            wait_converged(timeout_s=wait_timeout_s, configuration=configuration)
        return {"restarted": [h.name for h in d.inventory.brokers]}

    result = _inject(configuration, ROLLING_RESTART, "all-brokers", restart_all, secrets=secrets, acts=False)
    heal("all-brokers", configuration=configuration)  # nothing to undo: this records the fault's end
    return result


def kill_mirror(configuration: dict = None, secrets: dict = None) -> dict:
    """SIGKILL the stack's (first) MirrorMaker 2 node; heal starts it again, and MM2 resumes from
    the offsets it last committed (what it had copied since is copied again)."""
    d = driver(configuration, secrets)
    hosts = d.inventory.hosts("kafka_mirror")
    if not hosts:
        raise ActivityFailed(f"stack {context.stack_name(configuration)} runs no MirrorMaker 2")
    return _inject(
        configuration, KILL_MIRROR, hosts[0].name, lambda drv, undo: drv.kill_mirror(hosts[0], undo), secrets=secrets
    )


def heal(dc: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """Undo every recorded fault (of `dc`, or all) exactly as its driver noted it. Keeps healing
    the rest when one fails, then raises naming what could not be healed. Safe as a rollback."""
    return {
        "healed": recovery.heal_record(context.stack_name(configuration), context.record(configuration), dc, secrets)
    }
