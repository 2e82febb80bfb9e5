"""MirrorMaker 2 probes: is every MM2 node running, and how far behind is each flow's copy of the
drill topic (records: the source's log end minus the copy's, summed over partitions)."""

from __future__ import annotations

from dcdrill.chaos import context
from dcdrill.infra import ansible, lifecycle
from dcdrill.infra.observe import hostaccess, status

__all__ = ["mirrors_running", "mirror_lag"]


def mirrors_running(configuration: dict = None, secrets: dict = None) -> bool:
    """Every MirrorMaker 2 node's REST listener answers (true on a stack without mirrors)."""
    if not context.deployment(configuration).mirrors:
        return True
    name = context.stack_name(configuration)
    nodes = status.mirror_status(lifecycle.inventory(name, ansible.MIRRORS), via=context.inventory(configuration))
    return bool(nodes) and all(n["alive"] for n in nodes)


def end_offsets(inventory, topic: str, timeout_s: float = 10.0) -> dict[int, int] | None:
    """{partition: log end offset} of a topic (read from one of the cluster's client hosts), None
    when it does not exist (yet) or nobody answers."""
    try:
        ends = hostaccess.call(
            inventory, "end_offsets", {"topic": topic, "timeout_s": timeout_s}, timeout_s=timeout_s + 30
        )["ends"]
    except (hostaccess.HostUnreachable, hostaccess.AgentFailed):
        return None
    return None if ends is None else {int(p): e for p, e in ends.items()}


def mirror_lag(configuration: dict = None, secrets: dict = None) -> dict:
    """{flow: records the copy lacks (None: a side does not answer or has no such topic)}."""
    d, stack, topic = (
        context.deployment(configuration),
        context.stack_name(configuration),
        context.drill_topic(configuration),
    )
    out = {}
    for m in d.mirrors:
        for f in m.flows:
            src = end_offsets(lifecycle.inventory(stack, f.source), topic)
            dst = end_offsets(lifecycle.inventory(stack, f.target), m.remote_topic(topic, f.source))
            out[f.name] = None if src is None or dst is None else sum(max(0, e - dst.get(p, 0)) for p, e in src.items())
    return out
