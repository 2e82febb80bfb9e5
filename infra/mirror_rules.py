"""Rules and predictions for replicated stacks (infra/deployment.py), as data, like
infra/rules.py for one cluster.

Each cluster of a replicated stack is checked by infra/rules.py, except for the promises about
losing one of its DCs when it has only one: then a DC loss is the cluster's loss, and the
mirror, not the cluster, is what the stack counts on.
"""

from __future__ import annotations

from dcdrill.infra import java_regex, rules
from dcdrill.infra.constants import DRILL_TOPIC_PREFIX
from dcdrill.infra.deployment import Deployment, Flow, Mirror
from dcdrill.infra.rules import Violation

# infra/rules.py's rules about surviving the loss of one of a cluster's DCs.
DC_LOSS_RULES = ("consistency-min-insync", "availability-headroom", "availability-unclean", "quorum-dc-loss")
# A drill writes a new topic, which MM2 must find (and whose groups it must list) before the fault;
# the drill waits for the remote topic, at most this long. MM2's defaults are 10 minutes.
REFRESH_LIMIT_S = 30
_DRILL_TOPIC = DRILL_TOPIC_PREFIX + "drill"


def check(d: Deployment) -> list[Violation]:
    """Every rule the stack breaks: each cluster's, then each mirror's."""
    out: list[Violation] = []
    for c in d.clusters:
        single = len(c.datacenters) == 1 and d.replicated
        out += [
            Violation(v.rule, f"cluster {c.name}: {v.message}" if d.replicated else v.message)
            for v in rules.check(c)
            if not (single and v.rule in DC_LOSS_RULES)
        ]
    for n, m in enumerate(d.mirrors):
        out += [Violation(rule, f"dcdrill:mirrors[{n}] ({m.name}): {msg}") for rule, msg in _mirror(d, m)]
    if d.replicated and not d.mirrors:
        out.append(Violation("mirror-none", "dcdrill:clusters without dcdrill:mirrors: nothing joins the clusters"))
    return out


# A mirror that breaks these joins nothing real: nothing can be predicted or built from it.
SHAPE_RULES = ("mirror-unknown-cluster", "mirror-same-cluster")


def _mirror(d: Deployment, m: Mirror) -> list[tuple[str, str]]:
    out = []
    unknown = [c for c in (m.source, m.target) if c not in d.cluster_names]
    if unknown:
        return [
            (
                "mirror-unknown-cluster",
                f"unknown cluster {', '.join(map(repr, unknown))}; valid: {', '.join(d.cluster_names)}",
            )
        ]
    if m.source == m.target:
        return [("mirror-same-cluster", f"source and target are both {m.source}")]
    for flow in m.flows:
        target = d.cluster(flow.target)
        if m.replication_factor < target.replication.factor:
            out.append(
                (
                    "mirror-remote-factor",
                    f"remote topics in {flow.target} get replicationFactor {m.replication_factor}, below the "
                    f"cluster's own factor {target.replication.factor}: the copy would be weaker than the original",
                )
            )
        if m.replication_factor > target.total_brokers:
            out.append(
                (
                    "mirror-remote-factor",
                    f"replicationFactor {m.replication_factor} > {flow.target}'s {target.total_brokers} brokers",
                )
            )
    if m.placement == "target" and m.offset_syncs_location != "target":
        out.append(
            (
                "mirror-offset-syncs-location",
                "MM2 runs in the target's DC but offsetSyncsTopicLocation is source: every offset sync would "
                "be a remote write, the risk placing MM2 at the target avoids (KIP-716)",
            )
        )
    if m.replication_policy == "identity" and m.mode == "active-active":
        out.append(
            (
                "mirror-identity-active-active",
                "replicationPolicy identity keeps topic names, so MM2 cannot tell a copy from an original: "
                "active-active would copy records back and forth forever",
            )
        )
    for key, value in (
        ("refreshTopicsIntervalS", m.refresh_topics_interval_s),
        ("refreshGroupsIntervalS", m.refresh_groups_interval_s),
    ):
        if value > REFRESH_LIMIT_S:
            out.append(
                (
                    "mirror-refresh-interval",
                    f"{key} {value} > {REFRESH_LIMIT_S}: each drill writes a new topic, which MM2 would not "
                    f"find before the fault (MM2's default is 600)",
                )
            )
    if problem := java_regex.problems([m.topics]).get(m.topics):
        out.append(
            (
                "mirror-topics-regex",
                f"topics {m.topics!r} is not a regex MM2 can compile (Java's java.util.regex.Pattern): {problem}",
            )
        )
    if not m.topic_prefix:
        out.append(
            (
                "mirror-topics-prefix",
                f"topics {m.topics!r} starts with no literal prefix, so MM2's ACLs cannot name the topics it copies",
            )
        )
    for flow in m.flows:
        target = d.cluster(flow.target)
        remote = m.remote_topic(_DRILL_TOPIC, flow.source)
        if target.sasl is not None and not any(
            a.allows(target.sasl.client, "topic", remote, "read") for a in target.acls
        ):
            out.append(
                (
                    "mirror-workload-acls",
                    f"{flow.target}'s ACLs do not let {target.sasl.client} read the "
                    f"remote drill topics ({remote}): the failed-over consumers could "
                    "not run",
                )
            )
    return out


def failover_problems(d: Deployment, to: str) -> list[str]:
    """Why consumers cannot be failed over to cluster `to` (a drill's preflight)."""
    into = [f for f in d.flows if f.target == to]
    if to not in d.cluster_names:
        return [f"failover to unknown cluster {to!r}; valid: {', '.join(d.cluster_names)}"]
    if not into:
        return [f"[mirror-failover-target] failover to {to}, which no mirror copies into"]
    out = []
    for m in d.mirrors:
        if any(f.target == to for f in m.flows) and not m.sync_group_offsets:
            out.append(
                f"[mirror-offset-sync-off] {m.name} has syncGroupOffsets false: the failed-over group "
                "would find no translated offsets"
            )
    return out


def flow_predictions(d: Deployment, flow: Flow) -> dict:
    """What each replicated-stack fault does to one flow. MM2 copies asynchronously, so losing
    the source's DC can strand acknowledged records it had not copied; a cut link or a killed MM2
    only delays them (the source keeps them, and MM2 resumes from its committed offsets)."""
    source = d.cluster(flow.source)
    return {
        "source-dc-loss": {
            "source_writable": len(source.broker_dcs) > 1,
            "target_writable": True,
            "acked_loss_possible": True,
        },
        "link-cut": {"source_writable": True, "target_writable": True, "acked_loss_possible": False},
        "mirror-kill": {
            "source_writable": True,
            "target_writable": True,
            "acked_loss_possible": False,
            "duplicates_possible": True,
        },
    }


def resolved(d: Deployment) -> dict:
    """topology.json's `clusters` and `mirrors` (RECORD.md)."""
    hosts = dict((m.name, h) for h, m in d.mirror_hosts())
    return {
        "clusters": {c.name: rules.resolved(c) for c in d.clusters},
        "mirrors": {
            f.name: {
                "mirror": m.name,
                "source": f.source,
                "target": f.target,
                "mode": m.mode,
                "placement": m.placement,
                "host": hosts[m.name].name,
                "dc": hosts[m.name].dc,
                "topics": m.topics,
                "replication_policy": m.replication_policy,
                "remote_topic_prefix": m.remote_topic("", f.source),
                "offset_syncs_topic_location": m.offset_syncs_location,
                "predictions": flow_predictions(d, f),
            }
            for m in d.mirrors
            for f in m.flows
        },
    }
