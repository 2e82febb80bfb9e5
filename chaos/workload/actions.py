"""Start and stop the workload from an experiment; the running workload is kept in the drill's
session (chaos/session.py) between activities."""

from __future__ import annotations

import os

from chaoslib.exceptions import ActivityFailed

from dcdrill.chaos import context, session
from dcdrill.infra import lifecycle, mirror_rules
from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import WORKLOAD_GROUP, now_ms
from dcdrill.infra.observe import hostaccess, open_drills
from dcdrill.validation import workload as wl

__all__ = ["start_workload", "stop_workload", "fail_over_consumers", "run_audit", "delete_topic"]


def running_workload(configuration: dict | None) -> wl.Workload | None:
    """The workload start_workload started for this drill record in this process, if any."""
    drill = session.given(configuration)
    return drill.workload if drill else None


def start_workload(
    producers: int = wl.WorkloadSpec.producers,
    consumers: int = wl.WorkloadSpec.consumers,
    rate: float = wl.WorkloadSpec.rate,
    record_size: int = wl.WorkloadSpec.record_size,
    retries: int | None = None,
    idempotence: bool | None = None,
    topic: str = None,
    configuration: dict = None,
    secrets: dict = None,
) -> dict:
    """Producers and consumers in the background, until stop_workload (no fixed duration). The
    producer client and its idempotence are the plan's (`client`, `idempotence`); `retries` and
    `idempotence` given here win, and what neither gives is the client's default."""
    topic = topic or context.drill_topic(configuration)
    t = context.topology(configuration)
    inv = context.inventory(configuration)
    client, planned = context.producer_client(configuration)
    size, aborts = context.transactions(configuration)
    given = {"retries": None if retries is None else int(retries)}
    given["idempotence"] = bool(idempotence) if idempotence is not None else planned
    spec = wl.WorkloadSpec.for_client(
        client,
        topic=topic,
        producers=int(producers),
        consumers=int(consumers),
        rate=float(rate),
        duration_s=None,
        record_size=int(record_size),
        acks=t.acks,
        transaction_size=size,
        abort_fraction=aborts,
        **{k: v for k, v in given.items() if v is not None},
    )
    try:
        spec.check()
    except ValueError as exc:
        raise ActivityFailed(f"start-workload: {exc}") from None
    wl.ensure_topic(inv, spec, replication=t.replication, fresh=True)  # the drill's settings (chaos/context.topology)
    run = context.run_dir(configuration)
    d = context.deployment(configuration)
    record = context.record(configuration)
    if not record.has_topology():  # a plain `chaos run`: `dcdrill drill` wrote it before the experiment
        record.write_topology(stacks.drill_topology(context.stack_name(configuration), d))
    # Before any process starts: heal finds this record, and this process, after a crash.
    open_drills.note(context.stack_name(configuration), str(record.path.resolve()))
    record.note_agent("experiment", os.getpid())
    w = session.of(configuration).workload = wl.Workload(run, inv, spec, cluster=t.name if d.replicated else None)
    w.start()
    writers = [t.name]
    for c in d.clusters[1:]:  # active-active: every cluster a mirror copies from takes writes too
        if any(f.source == c.name for f in d.flows):
            other = lifecycle.inventory(context.stack_name(configuration), c.name)
            wl.ensure_topic(other, spec, replication=c.replication, fresh=True)
            w.add_producers(other, c.name)
            writers.append(c.name)
    return {
        "producers": spec.producers * len(writers),
        "consumers": spec.consumers,
        "rate_per_producer": spec.rate,
        "topic": topic,
        "clusters": writers,
    }


def stop_workload(configuration: dict = None, secrets: dict = None) -> dict:
    drill = session.of(configuration)
    w, drill.workload = drill.workload, None
    if w is None:
        return {"stopped": False}
    codes = w.stop()
    return {"stopped": True, "exit_codes": codes, "status": w.status()}


def fail_over_consumers(to: str, wait_offsets_s: float = 30, configuration: dict = None, secrets: dict = None) -> dict:
    """Move the workload's consumer group to cluster `to`, which MirrorMaker 2 copies the drill
    topic into: its members there read the copy from the offsets MM2 translated (checkpoints and
    group offset sync), and a partition without one is an error. Recorded in failovers.jsonl."""
    d, stack = context.deployment(configuration), context.stack_name(configuration)
    problems = mirror_rules.failover_problems(d, to)
    if problems:
        raise ActivityFailed("; ".join(problems))
    home, topic = d.home.name, context.drill_topic(configuration)
    mirror = next(m for m in d.mirrors if any(f.source == home and f.target == to for f in m.flows))
    remote = mirror.remote_topic(topic, home)
    target = lifecycle.inventory(stack, to)
    offsets = _translated_offsets(target, WORKLOAD_GROUP, remote, float(wait_offsets_s))
    if not offsets:
        raise ActivityFailed(
            f"[failover-no-offsets] group {WORKLOAD_GROUP} has no offsets for {remote} in {to} after "
            f"{float(wait_offsets_s):.0f}s: MirrorMaker 2 translated none (sync.group.offsets, "
            "checkpoints), so the failed-over consumers would have nowhere to start"
        )
    w = running_workload(configuration)
    if w is None:
        raise ActivityFailed("no workload is running for this drill (start-workload first)")
    at_ms = now_ms()
    started = w.fail_over(target, remote, to)
    entry = {
        "group": WORKLOAD_GROUP,
        "from": home,
        "to": to,
        "at_ms": at_ms,
        "topic": remote,
        "offsets": {str(p): o for p, o in sorted(offsets.items())},
        "consumers": started,
    }
    context.record(configuration).append_failover(entry)
    return entry


def _translated_offsets(inventory, group: str, topic: str, wait_s: float) -> dict[int, int]:
    """{partition: committed offset} of `group` on `topic` in the target, once MM2 has synced some
    (read from one of the target's client hosts)."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        offsets = hostaccess.call(inventory, "group_offsets", {"group": group, "topic": topic})
        if offsets:
            return {int(p): o for p, o in offsets.items()}
        if time.monotonic() > deadline:
            return {}
        time.sleep(1)


def run_audit(timeout_s: float = 120, topic: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """Read the drill topic into the record's audit; on a replicated stack, every cluster's copy
    of it too (audit/<cluster>.jsonl, RECORD.md)."""
    topic = topic or context.drill_topic(configuration)
    d, run = context.deployment(configuration), context.run_dir(configuration)
    # The plan's client reads it, and read committed after transactions, as the consumers did.
    (client, _), (size, aborts) = context.producer_client(configuration), context.transactions(configuration)
    spec = wl.WorkloadSpec.for_client(client, topic=topic, transaction_size=size, abort_fraction=aborts)
    if not d.replicated:
        wl.audit(run, context.inventory(configuration), spec, timeout_s=float(timeout_s))
        return {"audit": str(run / "audit")}
    stack = context.stack_name(configuration)
    read = {}
    for c in d.clusters:
        writes = c.name == d.home.name or any(f.source == c.name for f in d.flows)
        topics = ([topic] if writes else []) + [
            m.remote_topic(topic, f.source) for m in d.mirrors for f in m.flows if f.target == c.name
        ]
        wl.audit(
            run,
            lifecycle.inventory(stack, c.name),
            spec,
            timeout_s=float(timeout_s),
            cluster=c.name,
            topics=topics,
        )
        read[c.name] = topics
    return {"audit": str(run / "audit"), "topics": read}


def delete_topic(keep: bool = False, topic: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """The drill's topic, once the audit has copied it into the record: each drill makes one, and
    a long-lived lab would otherwise pile them up (partitions, replicas, heap). `keep` (the
    experiment's keep_topic, `dcdrill drill --keep-topic`) leaves it for a look afterwards."""
    topic = topic or context.drill_topic(configuration)
    if keep is True or (isinstance(keep, str) and keep.lower() in ("1", "true", "yes")):  # a plain `chaos run --var`
        return {"topic": topic, "deleted": False}
    d, stack = context.deployment(configuration), context.stack_name(configuration)
    # (cluster, topic): the drill topic, and on a replicated stack every copy and every cluster's own
    where = (
        [(None, topic)]
        if not d.replicated
        else [
            (c.name, t)
            for c in d.clusters
            for t in [
                topic,
                *(m.remote_topic(topic, f.source) for m in d.mirrors for f in m.flows if f.target == c.name),
            ]
        ]
    )
    errors = []
    for cluster, name in where:
        try:
            if not wl.delete_topic(lifecycle.inventory(stack, cluster), name) and cluster is None:
                errors.append(f"{name}: the cluster has no such topic")
        except Exception as exc:  # noqa: BLE001 - housekeeping: the record is complete, the drill stands
            errors.append(f"{cluster or ''} {name}: {type(exc).__name__}: {exc}".strip())
    if errors:
        return {"topic": topic, "deleted": False, "error": "; ".join(errors)}
    return {"topic": topic, "deleted": True}
