"""Actions on the cluster itself (not faults): put it in the same shape before every drill."""

from __future__ import annotations

from dcdrill.chaos import context, session
from dcdrill.chaos.kafka.probes import HYPOTHESIS_SHARE_S, cluster_now, wait_until
from dcdrill.chaos.kafka.watch import CoordinationWatch
from dcdrill.infra.observe import hostaccess

__all__ = ["elect_preferred_leaders", "watch_coordination", "stop_watching_coordination"]

# The broker holds its answer until the new leaders are in its metadata, up to the request's own
# timeout; the client's must be longer, or a busy controller reads as a failed request.
ELECTION_REQUEST_MS = 20_000
CLIENT_REQUEST_MS = 35_000


def elect_preferred_leaders(timeout_s: float = 60, configuration: dict = None, secrets: dict = None) -> dict:
    """Move every partition's leadership back to its preferred replica, and wait until it is there.

    After a DC loss and its heal, leaders stay where the failover put them: in the DC that
    survived, group coordinators included, until Kafka's own rebalance (every 5 minutes). A drill
    started within those minutes would lose a DC that leads nothing, and the drills of a --repeat
    series would not be the same drill. Run before the workload starts: an election needs the
    preferred replica in sync, which the steady state has just checked."""
    what = "every partition on its preferred leader"
    # The hypothesis's status, read a moment ago, tells whether any leader is off its place.
    before = cluster_now(configuration, HYPOTHESIS_SHARE_S)["off_preferred_leader"]
    if not before:
        return {"off_preferred_before": 0, "election_unanswered": False, "waited_s": 0.0, "condition": what}
    # asked from a client host, outside the drill's target DC
    unanswered = hostaccess.call(
        context.inventory(configuration),
        "elect_preferred_leaders",
        {"election_ms": ELECTION_REQUEST_MS, "request_ms": CLIENT_REQUEST_MS},
        avoid_dcs=context.observers_avoid(configuration),
    )["unanswered"]
    waited = wait_until(lambda now: now["off_preferred_leader"] == 0, what, float(timeout_s), configuration)
    return {"off_preferred_before": before, "election_unanswered": unanswered, **waited}


def watch_coordination(interval_s: float = 1.0, configuration: dict = None, secrets: dict = None) -> dict:
    """Sample the quorum's leader and the live brokers into the record's coordination log until
    stop_watching_coordination (chaos/kafka/watch.py). Started before the fault, so the log holds
    the leader the fault found."""
    drill = session.of(configuration)
    if drill.watch is None:
        drill.watch = CoordinationWatch(
            context.record(configuration),
            context.inventory(configuration),
            float(interval_s),
            context.observers_avoid(configuration),
            context.drill_topic(configuration),
        ).start()
    return {"watching": True, "interval_s": float(interval_s), "observer": drill.watch.host.name}


def watched_isr(configuration, max_age_ms: int) -> dict | None:
    """The drill topic's {partitions, in_sync} from the running coordination watch's latest
    sample, if one is at most `max_age_ms` old (not an activity: faults read it)."""
    drill = session.given(configuration)
    return drill.watch.isr(max_age_ms) if drill and drill.watch else None


def stop_watching_coordination(configuration: dict = None, secrets: dict = None) -> dict:
    drill = session.of(configuration)
    watch, drill.watch = drill.watch, None
    return {"watching": False} if watch is None else {"watching": False, **watch.stop()}
