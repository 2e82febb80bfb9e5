"""Probes return data (numbers, booleans, dicts) for tolerances; waits poll until a condition
holds or raise on timeout, so an experiment never takes a fixed pause to mean "healed"."""

from __future__ import annotations

import time
from pathlib import Path

from dcdrill.chaos import context, session
from dcdrill.infra.constants import now_ms
from dcdrill.infra.observe import broker_logs, service_logs, status_text
from dcdrill.infra.observe import status as cluster

__all__ = [
    "offline_partitions",
    "under_replicated_partitions",
    "partitions_off_preferred_leader",
    "isr_per_dc",
    "controller_present",
    "coordination_quorum",
    "cluster_healthy",
    "wait_converged",
    "wait_leaders",
    "wait_shrunk_into",
]


# A steady-state hypothesis asks its probes one after another; a status read this recently (from
# the same stack, asked from outside the same DCs) answers the next one too, so the
# hypothesis reads the cluster once, not once per probe (each read is a host round trip). Only the
# hypothesis's probes pass it, and the leader balance just after them (which acts only when that
# status shows a leader off its place): waits and faults read afresh.
HYPOTHESIS_SHARE_S = 3.0


def cluster_now(configuration, max_age_s: float = 0.0) -> dict:
    """infra.observe.status.cluster_status of the drill's stack (shared with chaos/kafka/actions.py; not a
    probe itself: __all__ lists those). `max_age_s`: a status read at most this long ago will do."""
    key = (context.stack_name(configuration), context.observers_avoid(configuration))
    kept = drill.statuses if (drill := session.given(configuration)) else {}
    if max_age_s > 0 and key in kept and time.monotonic() - kept[key][0] <= max_age_s:
        return kept[key][1]
    st = cluster.cluster_status(context.inventory(configuration), avoid_dcs=key[1])
    kept[key] = (time.monotonic(), st)
    return st


def offline_partitions(configuration: dict = None, secrets: dict = None) -> int:
    return cluster_now(configuration, HYPOTHESIS_SHARE_S)["offline_partitions"]


def under_replicated_partitions(configuration: dict = None, secrets: dict = None) -> int:
    return cluster_now(configuration, HYPOTHESIS_SHARE_S)["under_replicated_partitions"]


def partitions_off_preferred_leader(configuration: dict = None, secrets: dict = None) -> int:
    """Partitions led by another replica than their preferred one (where a failover left them)."""
    return cluster_now(configuration)["off_preferred_leader"]


def isr_per_dc(topic: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """{partition: {dc: in-sync replicas in that DC}} for one topic (default: the drill's)."""
    topic = topic or context.drill_topic(configuration)
    out = {}
    for p in cluster_now(configuration)["partitions"]:
        if p["topic"] == topic:
            counts: dict[str, int] = {}
            for dc in p["isr_dcs"]:
                counts[dc] = counts.get(dc, 0) + 1
            out[str(p["partition"])] = counts
    return out


def controller_present(configuration: dict = None, secrets: dict = None) -> bool:
    st = cluster_now(configuration)
    return st["controller"] is not None and any(b["alive"] and b["id"] == st["controller"] for b in st["brokers"])


def coordination_quorum(configuration: dict = None, secrets: dict = None) -> bool:
    """The ZooKeeper ensemble, or the KRaft controller quorum, has a leader and a majority."""
    return cluster_now(configuration, HYPOTHESIS_SHARE_S)["quorum"]["quorum"]


def cluster_healthy(configuration: dict = None, secrets: dict = None) -> bool:
    """Every broker alive, every quorum voter serving, no offline and no under-replicated partition."""
    return cluster.healthy(cluster_now(configuration))


def wait_until(condition, what: str, timeout_s: float, configuration, explain=None) -> dict:
    """`explain(status)`: what to add to the timeout's message, from the last status seen."""
    start = time.monotonic()
    while True:
        st = cluster_now(configuration)
        if condition(st):
            return {"waited_s": round(time.monotonic() - start, 1), "condition": what}
        if time.monotonic() - start > timeout_s:
            why = explain(st) if explain else ""
            raise TimeoutError(
                f"{what} not reached within {timeout_s:.0f}s:\n{status_text.render(st)}" + (f"\n{why}" if why else "")
            )
        time.sleep(2)  # each read is a host round trip the saturated lab pays for; polling faster converged no sooner


def wait_converged(timeout_s: float = 180, configuration: dict = None, secrets: dict = None) -> dict:
    """Until every broker and every quorum voter is back and every ISR is full again. On timeout
    the service logs of the hosts the fault touched come into the record (logs/<host>/, and
    convergence.json), and the error names each cause read from them and the cluster's state
    (infra/observe/broker_logs.py): an ISR whose members are down, recovering or unregistered, a
    follower out of its ISR, a truncation loop."""

    def explain(st: dict) -> str:
        try:
            return _diagnosis(st, configuration)
        except Exception as exc:  # noqa: BLE001 - the timeout is the error; this only adds to it
            return f"(the hosts' logs could not be read: {type(exc).__name__}: {exc})"

    return wait_until(cluster.healthy, "converged ISR", float(timeout_s), configuration, explain)


def _diagnosis(st: dict, configuration: dict) -> str:
    """What the logs and the status say about a cluster that did not converge, also kept in the
    record (convergence.json) with the logs it read."""
    inv, record = context.inventory(configuration), context.record(configuration)
    dc = context.target_dc(configuration)
    down = {b["host"] for b in st["brokers"] if not b["alive"]}
    hosts = [h for h in inv.hosts("kafka_broker", "kafka_controller", "zookeeper") if h.dc == dc or h.name in down]
    collected = service_logs.collect(inv, hosts, record.path, context.backend(configuration).host_side_logs(inv))
    texts = {
        h.node_id: "\n".join(Path(f).read_text(errors="replace") for f in collected.get(h.name, []) if "kafka-" in f)
        for h in inv.brokers
        if h.name in collected
    }
    causes = broker_logs.stuck_partitions(
        st, texts, context.topology(configuration).replication.unclean_leader_election
    )
    loops = broker_logs.truncation_loops(inv, st)
    record.write_convergence({"at_ms": now_ms(), "causes": causes, "loops": loops, "logs": collected})
    lines = [f"  {c}" for c in causes]
    if loops:
        lines.append(broker_logs.describe(loops))
    if collected["unread"]:
        lines.append(f"  logs not read: {collected['unread']}")
    return "why, from the cluster and its hosts' logs (kept in the record's logs/):\n" + "\n".join(lines)


def wait_leaders(timeout_s: float = 120, configuration: dict = None, secrets: dict = None) -> dict:
    """Until every partition has a live leader (writes may still be refused below min ISR)."""
    return wait_until(
        lambda st: st["partitions"] and st["offline_partitions"] == 0,
        "a leader everywhere",
        float(timeout_s),
        configuration,
    )


def wait_shrunk_into(
    dc: str, then_s: float = 10, timeout_s: float = 120, configuration: dict = None, secrets: dict = None
) -> dict:
    """Until every partition with a replica in `dc` is led from `dc` and its ISR holds only `dc`'s
    replicas (the other DC cut off: its followers dropped, its leaderships moved), then `then_s`
    more, for the followers' truncations to the new leaders to become durable (ext4 commits its
    journal every 5 s). A fixed pause instead would cut the power too early on a loaded machine,
    seconds after a leader change: the follower truncation loop of docs/evidence.md."""

    def outside(st: dict) -> list[str]:
        return [
            f"{p['topic']}-{p['partition']} (leader in {p['leader_dc']}, ISR in {sorted(set(p['isr_dcs']))})"
            for p in st["partitions"]
            if dc in p["replica_dcs"] and (p["leader_dc"] != dc or set(p["isr_dcs"]) != {dc})
        ]

    def explain(st: dict) -> str:
        left = outside(st)
        return f"not yet shrunk into {dc}: {len(left)} partition(s): {', '.join(left[:10])}"

    out = wait_until(
        lambda st: st["partitions"] and not outside(st),
        f"every ISR shrunk into {dc}",
        float(timeout_s),
        configuration,
        explain,
    )
    time.sleep(float(then_s))
    return {**out, "then_s": float(then_s)}
