"""MirrorMaker 2 actions that are not faults: wait until each flow has copied the drill topic,
and record MM2's starts and rebalances.

The wait runs before the fault, so the drill starts from a mirror that keeps up (MM2 finds a
drill's new topic on its next topic refresh, then copies what was written meanwhile: its steady
lag is measured from the end of this wait, mirror-waits.jsonl); and after the heal, so the audit
reads a finished copy. The events are read from each MM2 node's log at the end of the drill."""

from __future__ import annotations

import time

from chaoslib.exceptions import ActivityFailed

from dcdrill.chaos import context
from dcdrill.chaos.faults.actions import driver
from dcdrill.chaos.mirror import events
from dcdrill.chaos.mirror.probes import end_offsets
from dcdrill.infra import lifecycle
from dcdrill.infra.constants import now_ms

__all__ = ["wait_mirrored", "record_mirror_events"]


def wait_mirrored(timeout_s: float = 120, configuration: dict = None, secrets: dict = None) -> dict:
    """Wait until, for every flow whose source holds the drill topic, the copy in the target has at
    least the records the source had when the wait began. Returns seconds waited per flow."""
    d, stack, topic = (
        context.deployment(configuration),
        context.stack_name(configuration),
        context.drill_topic(configuration),
    )
    deadline, t0, out = time.monotonic() + float(timeout_s), time.monotonic(), {}
    began = now_ms()
    for m in d.mirrors:
        for f in m.flows:
            source, target = lifecycle.inventory(stack, f.source), lifecycle.inventory(stack, f.target)
            remote = m.remote_topic(topic, f.source)
            wanted = copy = None
            while time.monotonic() < deadline:
                wanted = wanted or end_offsets(source, topic)
                copy = end_offsets(target, remote) if wanted else None
                if wanted is not None and copy is not None and all(copy.get(p, 0) >= e for p, e in wanted.items()):
                    break
                time.sleep(1)
            else:
                behind = (
                    None
                    if wanted is None or copy is None
                    else sum(max(0, e - copy.get(p, 0)) for p, e in wanted.items())
                )
                raise ActivityFailed(
                    f"{f.name}: {remote} in {f.target} has not caught up with {topic} in {f.source} "
                    f"within {float(timeout_s):.0f}s ({'no answer' if behind is None else f'{behind} records behind'}"
                    f" what the source held when the wait began); is MirrorMaker 2 running?"
                )
            out[f.name] = round(time.monotonic() - t0, 1)
            context.record(configuration).append_mirror_wait(
                {"flow": f.name, "began_ms": began, "caught_up_ms": now_ms()}
            )
    return {"waited_s": out}


def record_mirror_events(configuration: dict = None, secrets: dict = None) -> dict:
    """Write mirror-events.jsonl: each MM2 node's starts and rebalances since the drill's first
    wait for its mirror began (the drill's own; earlier ones are the lab's bring-up)."""
    d, record = context.deployment(configuration), context.record(configuration)
    waits = record.mirror_waits()
    since = min((w["began_ms"] for w in waits), default=0)
    flows = {m.name: [f.name for f in m.flows] for m in d.mirrors}
    drv, rows = driver(configuration), []
    for host in drv.inventory.hosts("kafka_mirror"):
        try:
            lines = drv.mirror_log(host, list(events.NEEDLES))
        except Exception as exc:  # noqa: BLE001
            raise ActivityFailed(f"reading MirrorMaker 2's log on {host.name}: {type(exc).__name__}: {exc}") from exc
        mirror = host.vars.get("kafka_mirror_name")
        rows += [
            {"host": host.name, "flows": flows.get(mirror, []), "event": kind, "at_ms": at}
            for kind, at in events.parse(lines, since)
        ]
    rows.sort(key=lambda r: r["at_ms"])
    record.write_mirror_events(rows)
    return {kind: sum(r["event"] == kind for r in rows) for kind in ("start", "rebalance")}
