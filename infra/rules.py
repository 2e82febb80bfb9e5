"""Multi-DC rules and per-DC loss predictions, as data (a list of violations, a dict of
predictions), never printed here. `dcdrill plan`, the lab's `pulumi up` and the verifier's
verdict all call these same functions.

Notation: r_d = replicas of a partition in DC d (Topology.replicas_in),
N = the coordination quorum's voters (ZooKeeper nodes, or KRaft controllers), z_d = those in d.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dcdrill.infra.constants import CANARY_TOPIC, DRILL_TOPIC_PREFIX, PROFILES, WORKLOAD_GROUP, kafka_release
from dcdrill.infra.schema import RISK_RULES
from dcdrill.infra.topology import Topology


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str

    def as_dict(self) -> dict:
        return asdict(self)


def quorum_survives(t: Topology, dc: str) -> bool:
    """The ZooKeeper ensemble or the KRaft controller quorum survives losing d iff
    N - z_d >= floor(N/2) + 1: both need a majority of their voters to elect a leader and commit."""
    n = t.total_voters
    return n - t.voters_in(dc) >= n // 2 + 1


def elr(t: Topology) -> bool:
    """Eligible leader replicas (KIP-966): on by default for KRaft clusters formatted by 4.1 and
    later. A replica dropped from an ISR that shrank below min.insync stays electable, because no
    acks=all write could commit without it. It changes no kill's prediction: the loss those
    predict needs an ISR of min.insync or more inside the lost DC, whose survivors are out of
    sync and never in the ELR. After a power loss it may turn a loss into an offline partition
    (acked_loss says so)."""
    return t.kraft and kafka_release(t.kafka_version) >= (4, 1)


def quorum_summary(t: Topology) -> str:
    """Where the voters sit, e.g. "3 controllers: dc-a 1, dc-b 1, dc-c 1; survives any one DC"."""
    where = ", ".join(f"{dc.name} {t.voters_in(dc.name)}" for dc in t.datacenters if t.voters_in(dc.name))
    fatal = [dc.name for dc in t.datacenters if not quorum_survives(t, dc.name)]
    return f"{t.total_voters} {t.voter_noun}: {where}; " + (
        f"losing {' or '.join(fatal)} loses the quorum" if fatal else "survives any one DC"
    )


def writable_after_loss(t: Topology, dc: str) -> bool:
    """acks=all producers stay writable iff quorum survives and factor - r_d >= minInsync.

    With acks=1/0 one surviving replica is enough to elect a leader.
    """
    left = t.replication.factor - t.replicas_in(dc)
    needed = t.replication.min_insync if t.acks == "all" else 1
    return quorum_survives(t, dc) and left >= needed


def writes_why(t: Topology, dc: str) -> str:
    """The reason behind writable_after_loss, with KRaft's unclean-election cycle where it applies."""
    left, m = t.replication.factor - t.replicas_in(dc), t.replication.min_insync
    if not quorum_survives(t, dc):
        return f"the {t.voter_noun}' quorum is lost with {dc}: no leader can be elected"
    if t.acks == "all" and left < m:
        return f"{left} replicas outside {dc} < min.insync.replicas={m}: acks=all writes are refused"
    insync = f", min.insync.replicas={m}" if t.acks == "all" else ""
    why = f"{left} replicas outside {dc} are enough (acks={t.acks}{insync}): leaders fail over"
    if t.kraft and t.replication.unclean_leader_election:
        why += (
            "; on KRaft a partition whose whole ISR was in the lost DC gets an out-of-sync leader only "
            "on the controller's next unclean-election cycle (unclean.leader.election.interval.ms), "
            "not at once as with ZooKeeper"
        )
    return why


def visible_after_loss(t: Topology, dc: str) -> tuple[bool, str]:
    """Do the records acknowledged while d is gone reach consumers before it is back, and why.

    acks=all acknowledges a record once the ISR has it, past the high watermark. acks=1 and 0
    acknowledge from the leader alone. Since Kafka 3.7 (KAFKA-15583, part of KIP-966 but not
    gated by ELR: ZooKeeper and KRaft alike) the leader advances the high watermark only while
    the ISR holds min(min.insync.replicas, factor) replicas: with fewer survivors, writes are
    accepted and stay invisible. Before 3.7 the high watermark followed the ISR whatever its size."""
    left, m = t.replication.factor - t.replicas_in(dc), t.replication.min_insync
    if not writable_after_loss(t, dc):
        return False, f"no write is acknowledged while {dc} is gone"
    if t.acks == "all":
        return True, "acks=all acknowledges a record only once the high watermark has passed it"
    if kafka_release(t.kafka_version) < (3, 7):
        return True, (
            f"acks={t.acks} on Kafka {t.kafka_version} (before 3.7): the high watermark follows the ISR "
            f"whatever its size"
        )
    effective = min(m, t.replication.factor)
    if left >= effective:
        return True, (
            f"acks={t.acks}: {left} surviving replicas meet min.insync.replicas={effective}, so the high "
            f"watermark advances"
        )
    return False, (
        f"acks={t.acks} on Kafka {t.kafka_version} (3.7+, KAFKA-15583; with or without ELR): "
        f"the high watermark advances only while min.insync.replicas={effective} replicas are in sync, "
        f"and {left} survive outside {dc}: writes are acknowledged but no consumer reads them until "
        f"{dc}'s replicas are back in sync"
    )


# How a DC can go, by the fault that takes it (record/contents.py names them): a kill or a cut
# leaves each host's page cache, a clean stop flushes it, a power loss takes what was not flushed.
FAULT_KINDS = {"kill-dc": "kill", "stop-dc": "stop", "power-loss": "power", "isolate-dc": "cut"}


def acked_loss(t: Topology, dc: str, fault: str = "kill-dc") -> tuple[bool, str]:
    """Can losing d to `fault` lose an acknowledged record, and the reason that decides it.

    acks=all: only if the ISR can shrink to d's replicas alone while acknowledging (minInsync <=
    r_d), and then either unclean election elects an out-of-sync survivor, or d comes back
    without what it had not flushed (a power loss: Kafka does not fsync each write) and is elected
    from the ISR as it is. acks=1 (and 0): a leader in d acknowledges alone, before any follower
    copies the record.
    """
    r_d, m, kind = t.replicas_in(dc), t.replication.min_insync, FAULT_KINDS.get(fault, "kill")
    if r_d == 0:
        return False, f"{dc} holds no replica"
    if t.acks != "all":
        return True, f"acks={t.acks}: a leader in {dc} acknowledges before any follower has the record"
    if m > r_d:
        return False, (
            f"every acknowledged record is on min.insync.replicas={m} replicas, so on at least "
            f"{m - r_d} outside {dc}'s {r_d}"
        )
    shrink = (
        f"min.insync.replicas={m} <= {dc}'s {r_d} replicas: the ISR can shrink to {dc}'s alone and keep acknowledging"
    )
    if t.replication.unclean_leader_election:
        return True, f"{shrink}; unclean election then elects an out-of-sync survivor"
    if kind == "power" and t.replication.flush_each_write:
        return False, (
            f"{shrink}; but flush.messages=1: each replica fsyncs a record before it counts as having "
            f"it, so a power loss takes nothing acknowledged"
        )
    if kind == "power":
        elr_note = (
            (
                " (4.1+ with ELR: brokers back from an unclean shutdown leave the ELR, KAFKA-15586, so the "
                "partition may stay offline instead)"
            )
            if elr(t)
            else ""
        )
        return True, (
            f"{shrink}; a power loss takes what {dc}'s replicas had not flushed (Kafka does not fsync "
            f"each write), and they come back as the ISR without it{elr_note}"
        )
    how = {
        "stop": "after a clean stop",
        "cut": "once reconnected",
        "kill": "after a kill (the hosts keep their page caches)",
    }[kind]
    return False, f"{shrink}; unclean election is off, so the cluster waits for them, and {how} they have every record"


def acked_loss_possible(t: Topology, dc: str) -> bool:
    """acked_loss for a kill (SIGKILL, the hosts keep their page caches)."""
    return acked_loss(t, dc)[0]


def holds_everything(t: Topology, dc: str) -> bool:
    """The DC holds every broker, quorum voter and client of the cluster (one cluster of a
    replicated stack, in one DC): cutting it off from the other DCs leaves the cluster whole."""
    d = t.dc(dc)
    return (
        d.brokers == t.total_brokers
        and t.voters_in(dc) == t.total_voters
        and all(h.dc == dc for h in t.hosts_with_role("client"))
    )


def _cut_of_everything(dc: str) -> dict:
    """What isolating a DC that holds the whole cluster does to it: nothing its own clients see."""
    return {
        "quorum_survives": True,
        "writable": True,
        "acked_loss_possible": False,
        "why": f"{dc} holds the whole cluster, its quorum and its clients: cut off from the other DCs, it "
        "loses no replica",
        "writes_why": f"{dc} holds the whole cluster and its producers: a cut from the other DCs stops no write",
    }


def predictions(t: Topology) -> dict:
    """Per DC: the quorum, writes and whether consumers see them while the DC is gone, and
    acknowledged loss after a kill, with `faults` giving the loss per way of losing the DC; each
    with why. A cut of a DC that holds the whole cluster (rules.holds_everything) is no loss of it."""

    def per_fault(dc: str) -> dict:
        out = {f: dict(zip(("acked_loss_possible", "why"), acked_loss(t, dc, f))) for f in FAULT_KINDS}
        if holds_everything(t, dc):
            out["isolate-dc"] = _cut_of_everything(dc)
        return out

    return {
        dc.name: {
            "quorum_survives": quorum_survives(t, dc.name),
            "writable": writable_after_loss(t, dc.name),
            "writes_why": writes_why(t, dc.name),
            **dict(zip(("visible", "visible_why"), visible_after_loss(t, dc.name))),
            "acked_loss_possible": acked_loss_possible(t, dc.name),
            "faults": per_fault(dc.name),
        }
        for dc in t.datacenters
    }


def produce_latency(t: Topology, one_way_ms: dict[tuple[str, str], float]) -> dict:
    """The produce latency the network adds, per route (producer DC -> leader DC) and acks, from
    the one-way delay between each ordered pair of DCs (a DC to itself: 0).

    acks=1: the round trip to the leader. acks=all: that, plus the round trip from the leader to
    its farthest replica. Kafka acknowledges acks=all once the high watermark passes the record,
    and the high watermark is the lowest log end of the whole ISR, not of min.insync of it: with
    every replica in sync, the farthest replica sets the price (min.insync only decides when
    writes are refused). One follower fetch carries the record and the next reports it back, so
    it costs one round trip; a record that just misses a follower's fetch waits for the next one,
    up to a second round trip. Jitter, queueing and the brokers' own time come on top.
    """

    def rtt(a: str, b: str) -> float:
        return 0.0 if a == b else one_way_ms[(a, b)] + one_way_ms[(b, a)]

    replica_dcs = [dc.name for dc in t.datacenters if t.replicas_in(dc.name) > 0]
    leader_dcs = [dc.name for dc in t.datacenters if dc.brokers > 0]
    producer_dcs = sorted({h.dc for h in t.hosts_with_role("client")}, key=t.dc_names.index)
    farthest = {lead: max(rtt(lead, d) for d in replica_dcs) for lead in leader_dcs}
    routes = [
        {
            "producer_dc": p,
            "leader_dc": lead,
            "acks_1_ms": rtt(p, lead),
            "acks_all_ms": rtt(p, lead) + farthest[lead],
            "acks_all_max_ms": rtt(p, lead) + 2 * farthest[lead],
        }
        for p in producer_dcs
        for lead in leader_dcs
    ]
    return {
        "acks_all_adds_ms": farthest,  # per leader DC, over acks=1 (up to twice that)
        "routes": routes,
        # the drill's producers write every partition, so their latencies spread over the routes
        "range_ms": {
            "1": [min(r["acks_1_ms"] for r in routes), max(r["acks_1_ms"] for r in routes)],
            "all": [min(r["acks_all_ms"] for r in routes), max(r["acks_all_max_ms"] for r in routes)],
        },
    }


def resolved(t: Topology) -> dict:
    """The resolved stack as the drill record's topology.json carries it (RECORD.md), with the
    model's predictions for losing each DC."""
    return {
        "cluster": t.name,
        "backend": t.backend,
        "profile": t.profile,
        "coordination": t.coordination,
        "kafka_version": t.kafka_version,
        "eligible_leader_replicas": elr(t),
        "replication_factor": t.replication.factor,
        "min_insync_replicas": t.replication.min_insync,
        "unclean_leader_election": t.replication.unclean_leader_election,
        "flush_each_write": t.replication.flush_each_write,
        "acks": t.acks,
        "tls": t.tls,
        "sasl": t.sasl is not None,
        "datacenters": [
            {
                "name": dc.name,
                "brokers": dc.brokers,
                "zookeepers": dc.zookeepers,
                "controllers": dc.controllers,
                "replicas_per_partition": t.replicas_in(dc.name),
            }
            for dc in t.datacenters
        ],
        "hosts": [{"name": h.name, "role": h.role, "dc": h.dc, "node_id": h.node_id} for h in t.hosts()],
        "predictions": predictions(t),
    }


def tiebreakers(t: Topology) -> list[str]:
    """DCs that hold coordination voters and no broker: the third DC of a "2.5 DC" layout."""
    return [dc.name for dc in t.datacenters if dc.brokers == 0 and t.voters_in(dc.name) > 0]


def matrix(t: Topology) -> list[dict]:
    """Every acks x minInsync x unclean-election setting on the stack's DC layout and replication
    factor: what losing each DC does (predictions()) and which profiles' rules it meets (check()).
    The question before choosing settings, answered by the same model as the stack's own plan.
    acks=0 is left out: for these predictions it behaves as acks=1."""
    rows = []
    for acks in ("1", "all"):
        for min_insync in range(1, t.replication.factor + 1):
            for unclean in (False, True):
                v = t.with_settings({"acks": acks, "min_insync": min_insync, "unclean_leader_election": unclean})
                rows.append(
                    {
                        "acks": acks,
                        "min_insync": min_insync,
                        "unclean_leader_election": unclean,
                        "current": v.acks == t.acks and v.replication == t.replication,
                        "predictions": predictions(v),
                        "profiles": [
                            p
                            for p in PROFILES
                            if not [x for x in check(v.with_settings({"profile": p})) if x.rule not in EXPOSURE_RULES]
                        ],
                    }
                )
    return rows


# What the drill's own clients do, as (resource, name, operation): the ACLs must allow them all.
# The names: a drill's topic (DRILL_TOPIC_PREFIX + the record folder, chaos/context.drill_topic),
# the steady-state canary's topic and the workload's group (infra/constants.py).
_DRILL_TOPIC = DRILL_TOPIC_PREFIX + "drill"
WORKLOAD_NEEDS = (
    ("topic", _DRILL_TOPIC, "write"),
    ("topic", _DRILL_TOPIC, "read"),
    ("topic", _DRILL_TOPIC, "describe"),
    ("topic", CANARY_TOPIC, "write"),
    ("group", WORKLOAD_GROUP, "read"),
)


# What a stack exposes rather than promises: reported by `plan` and waived like the other risks,
# but no setting of the matrix changes them, so it judges the profiles without them.
EXPOSURE_RULES = ("unauthenticated-listener", "workload-cluster-all")


def security(t: Topology) -> list[tuple[str, str]]:
    """(rule, message) for the TLS / SASL / ACL settings."""
    out = []
    if t.sasl is None:
        listeners, lacking = ("CLIENT", "sasl") if t.tls else ("CLIENT and REPLICATION", "sasl, no tls")
        out.append(
            (
                "unauthenticated-listener",
                f"{listeners} authenticate no one (no {lacking}): whoever reaches the brokers' ports "
                "reads and writes every topic as User:ANONYMOUS",
            )
        )
    wide = [
        a
        for a in t.acls
        if t.sasl and a.principal == t.sasl.client and a.resource == "cluster" and "all" in a.operations
    ]
    if wide:
        out.append(
            (
                "workload-cluster-all",
                f"the ACLs grant {t.sasl.client} (the workload's user) all on the cluster: it may create, alter and "
                "delete any topic, ACL or user's quota; grant the operations WORKLOAD_NEEDS lists instead",
            )
        )
    if t.sasl is not None and not t.tls:
        out.append(("sasl-needs-tls", "sasl needs tls: true, or the passwords cross the network in the clear"))
    if t.acls and t.sasl is None:
        out.append(("acls-need-sasl", "acls need sasl: without it every client is User:ANONYMOUS"))
    if t.sasl is not None:
        missing = [
            f"{op} on {res} {name}"
            for res, name, op in WORKLOAD_NEEDS
            if not any(a.allows(t.sasl.client, res, name, op) for a in t.acls)
        ]
        if missing:
            out.append(
                (
                    "workload-acls",
                    f"the ACLs do not let {t.sasl.client} (the workload's user) "
                    f"{'; '.join(missing)}: drills could not run",
                )
            )
    return out


def check(t: Topology) -> list[Violation]:
    """Every rule the topology breaks, plain rules first, then the profile's promise."""
    out: list[Violation] = []

    def bad(rule: str, message: str) -> None:
        out.append(Violation(rule, message))

    # Types, names, ranges and uniqueness were checked by the schema (infra/schema.py) already.
    for rule, message in security(t):
        bad(rule, message)
    for dc in t.datacenters:
        if dc.brokers == 0 and t.voters_in(dc.name) == 0:
            bad("empty-dc", f"{dc.name} has no brokers and no {t.voter_noun}")

    f, m = t.replication.factor, t.replication.min_insync
    if f < 1 or m < 1:
        bad("replication-positive", f"factor={f} and minInsync={m} must both be >= 1")
    if f > t.total_brokers:
        bad("factor-exceeds-brokers", f"replication factor {f} > {t.total_brokers} brokers")
    if m > f:
        bad("min-insync-exceeds-factor", f"minInsync {m} > replication factor {f}")
    n = t.total_voters
    if n < 1:
        bad(
            "no-controller" if t.kraft else "no-zookeeper",
            f"the cluster needs at least one {'KRaft controller' if t.kraft else 'ZooKeeper node'}",
        )
    else:
        if n % 2 == 0:
            bad(
                "quorum-even-voters",
                f"{n} {t.voter_noun} is an even number: a majority of {n} ({n // 2 + 1}) tolerates no more losses "
                f"than a majority of {n - 1} does, and one more voter means one more to lose; use {n - 1} or {n + 1}",
            )
        if len(t.datacenters) > 1:
            for dc in t.datacenters:
                if not quorum_survives(t, dc.name):
                    z = t.voters_in(dc.name)
                    bad(
                        "quorum-dc-loss",
                        f"losing {dc.name} leaves {n - z} of {n} {t.voter_noun}, below the "
                        f"quorum of {n // 2 + 1}: {'metadata' if t.kraft else 'the cluster'} "
                        "stalls until it comes back",
                    )
    r_max = t.max_replicas_per_dc
    if t.profile == "consistency-first" and m <= r_max:
        bad(
            "consistency-min-insync",
            f"consistency-first needs minInsync > replicas in the fullest DC: minInsync {m} <= r_d {r_max} "
            f"(factor {f} over {len(t.broker_dcs)} broker DCs), so one DC can hold the whole ISR",
        )
    if t.profile == "consistency-first" and t.acks != "all":
        bad(
            "consistency-acks",
            f"consistency-first needs producer acks=all: with acks={t.acks} the leader acknowledges alone, so "
            "losing its DC loses what it had not replicated yet",
        )
    if t.profile == "availability-first":
        if f - m < r_max:
            bad(
                "availability-headroom",
                f"availability-first needs factor - minInsync >= r_d: {f} - {m} = {f - m} < {r_max}, "
                f"so losing the fullest DC stops acks=all writes",
            )
        if not t.replication.unclean_leader_election:
            bad(
                "availability-unclean",
                "availability-first needs uncleanLeaderElection: true "
                "so partitions whose ISR was in the lost DC come back",
            )
    return out


def blocking(t: Topology, violations: list[Violation] | None = None) -> list[Violation]:
    """The violations not waived under `dcdrill:acceptRisks`, which waives risk rules only
    (infra.schema.RISK_RULES): shape and safety rules always block."""
    vs = check(t) if violations is None else violations
    return [v for v in vs if v.rule not in RISK_RULES or v.rule not in t.accept_risks]
