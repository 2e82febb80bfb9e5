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
TAIL_LINES = 200_000  # minutes of a loop's lines per follower; older history is not the cause


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


# What a broker's server.log (and the supervisor's copy of its output) says at a start, while it
# recovers its log segments, and when something went wrong; on Kafka 3.9 and 4.x alike.
STARTED = re.compile(r"Kafka version: |KafkaServer id=\d+\] starting|BrokerServer id=\d+\] Transition from SHUTDOWN")
RECOVERING = re.compile(
    r"Recovering unflushed segment|Loading producer state till offset|Recovering segment|log recovery"
)
FAILED = re.compile(r"\b(ERROR|FATAL)\b|^Exception in thread|^Error: ")


def since_start(text: str) -> list[str]:
    """The log's lines since the broker's last start (all of them when no start is in the tail)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if STARTED.search(line)]
    return lines[starts[-1] :] if starts else lines


def broker_state(broker: dict, log: str | None) -> str:
    """Why one broker (a cluster status's entry) is or is not serving, in words, from the status and
    its log: serving; up but not registered (a stale session, or a start that failed: its last
    error); down while recovering its log (how far); down after an error (the error); down, silent."""
    if broker.get("alive"):
        return "serving"
    lines = since_start(log or "")
    errors = [i for i, line in enumerate(lines) if FAILED.search(line)]
    recoveries = [i for i, line in enumerate(lines) if RECOVERING.search(line)]
    error = lines[errors[-1]].strip()[:300] if errors else None
    if broker.get("reachable") and not broker.get("registered"):
        return "up but not registered with the cluster" + (f"; its last error: {error}" if error else "")
    if log is None:
        return "down (its log could not be read)"
    if recoveries and (not errors or errors[-1] < recoveries[-1]):
        return f"down while it recovers its log; the last recovery line: {lines[recoveries[-1]].strip()[:300]}"
    if error:
        return f"down; its last error since its start: {error}"
    return "down, and its log says nothing since its last start"


def stuck_partitions(status: dict, logs: dict[int, str], unclean: bool | None = None) -> list[str]:
    """The causes of every partition a wait found unhealthy, one line per cause: partitions with no
    leader grouped by their ISR, each ISR member's state (broker_state, from `logs`: {broker id:
    its log text}); and the out-of-sync followers of partitions that have a leader."""
    by_id = {b["id"]: b for b in status["brokers"]}
    out = []
    leaderless: dict[tuple, list[str]] = {}
    behind: dict[int, list[str]] = {}
    for p in status["partitions"]:
        name = f"{p['topic']}-{p['partition']}"
        if p["leader"] == -1:
            leaderless.setdefault(tuple(sorted(p["isr"])), []).append(name)
        else:
            for r in sorted(set(p["replicas"]) - set(p["isr"])):
                behind.setdefault(r, []).append(name)
    for isr, names in sorted(leaderless.items()):
        members = "; ".join(f"broker {i}: {broker_state(by_id.get(i, {'id': i}), logs.get(i))}" for i in isr)
        rule = (
            ": unclean election is off, so only they may lead"
            if unclean is False
            else (": unclean election is on, and no other replica took over" if unclean else "")
        )
        out.append(
            f"{len(names)} partition(s) without a leader ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}), "
            f"whose ISR is {list(isr)}{rule}. {members}"
        )
    for broker, names in sorted(behind.items()):
        state = broker_state(by_id.get(broker, {"id": broker}), logs.get(broker))
        out.append(
            f"{len(names)} partition(s) with broker {broker} out of their ISR "
            f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): broker {broker} is {state}"
        )
    return out
