"""What the brokers' own logs say about a partition whose ISR will not fill again: read over host
access when a wait for convergence gives up, so the drill names the cause instead of a timeout.

The cause named here is the follower truncation loop (docs/evidence.md, "A power loss seconds
after a leader change"): a follower fetches a batch its leader's epoch history says diverged,
truncates to the same offset, fetches it again, thousands of times a minute, and never rejoins
the ISR. Each round leaves a "Truncating ..." line naming the partition and the offset in the
follower's server.log (roles/kafka_broker: `{{ data_root }}/kafka/server.log`), on 3.9 and 4.x.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterable

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess

# "Truncating partition t-4 with TruncationState(offset=1856, ...)" (the fetcher) and
# "[UnifiedLog partition=t-4, dir=...] Truncating to offset 1856" (the log itself; "Truncating to
# 1856 has no effect ..." when there was nothing to cut).
OFFSET = re.compile(r"TruncationState\(offset=(\d+)|Truncating to (?:offset )?(\d+)")
# One offset truncated to this often in the log's tail is a loop, not a leader change: a change
# truncates each follower once or twice.
LOOP_REPEATS = 20
TAIL_LINES = 200_000  # a loop writes ~1,000 lines a minute per follower; older history is not the cause


def truncations(lines: Iterable[str], partition: str) -> Counter:
    """{offset: times} this broker truncated `partition` ("topic-N") to that offset. Each round
    logs twice, the fetcher's line and the log's; the fetcher's are counted where there are any."""
    fetcher: Counter = Counter()
    log: Counter = Counter()
    named = re.compile(rf"(?<![\w.-]){re.escape(partition)}(?!\d)")  # t-4 is neither t-41 nor at-4
    for line in lines:
        if "Truncat" not in line or not named.search(line):
            continue
        m = OFFSET.search(line)
        if m:
            (fetcher if "Truncating partition" in line else log)[int(m.group(1) or m.group(2))] += 1
    return fetcher or log


def loop_in(counts: Counter) -> tuple[int, int] | None:
    """(offset, times) when one offset repeats like a loop, else None."""
    if not counts:
        return None
    offset, times = counts.most_common(1)[0]
    return (offset, times) if times >= LOOP_REPEATS else None


def truncation_loops(inventory: Inventory, status: dict) -> list[dict]:
    """For each partition of `status` (infra.observe.status.cluster_status) with a replica out of its ISR
    while every broker is alive: the out-of-sync replicas whose log shows a truncation loop.
    Brokers that cannot be read are skipped, and said so in `unread`."""
    if not all(b["alive"] for b in status["brokers"]):
        return []  # a dead broker explains a short ISR by itself
    hosts = {h.node_id: h for h in inventory.brokers}
    found = []
    for p in status["partitions"]:
        name = f"{p['topic']}-{p['partition']}"
        for broker in sorted(set(p["replicas"]) - set(p["isr"])):
            host = hosts.get(broker)
            if host is None or not host.vars.get("data_root"):
                continue
            log = f"{host.vars['data_root']}/kafka/server.log"
            try:
                text = hostaccess.run(
                    inventory,
                    host,
                    [
                        "sh",
                        "-c",
                        f"tail -n {TAIL_LINES} {shlex.quote(log)} | grep -F -- "
                        f"{shlex.quote(name)} | grep -F Truncat || true",
                    ],
                    timeout_s=30,
                )
            except (hostaccess.HostUnreachable, hostaccess.AgentFailed) as exc:
                found.append({"partition": name, "broker": broker, "unread": str(exc)[:200]})
                continue
            loop = loop_in(truncations(text.splitlines(), name))
            if loop:
                found.append(
                    {
                        "partition": name,
                        "broker": broker,
                        "host": host.name,
                        "offset": loop[0],
                        "times": loop[1],
                        "leader": p["leader"],
                    }
                )
    return found


def describe(loops: list[dict]) -> str:
    """One line per loop found, for a timeout's message and the drill's log."""
    lines = []
    for f in loops:
        if "unread" in f:
            lines.append(f"  {f['partition']}: broker {f['broker']}'s log could not be read ({f['unread']})")
        else:
            lines.append(
                f"  {f['partition']}: follower {f['broker']} ({f['host']}) truncated to offset {f['offset']} "
                f"{f['times']:,} times (leader {f['leader']}): the follower truncation loop a power loss "
                "seconds after a leader change leaves (docs/evidence.md); it does not end by itself"
            )
    return "\n".join(lines)
