"""The whole stack as a model: one stretched cluster, or replicated clusters joined by
MirrorMaker 2 (`dcdrill:clusters` + `dcdrill:mirrors`). Pure, like infra/topology.py.

Each cluster is a `Topology` of its own, in DCs of its own. A `Mirror` is one MirrorMaker 2
deployment (one process, in its placement DC); an active-active mirror copies both ways, so it
has two flows, each named "<source>-><target>" as the drill record names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from dcdrill.infra import schema
from dcdrill.infra.constants import DRILL_TOPIC_PREFIX, kafka_release
from dcdrill.infra.topology import Acl, Host, Topology, cluster_from_spec

MIRROR_USER = schema.MIRROR_USER
MIRROR_ID_BASE = 100  # mm1 is node 101: the mirror hosts' index, apart from the clusters' ids


@dataclass(frozen=True)
class Flow:
    """One direction of a mirror: records of `source`'s topics copied into `target`."""

    source: str
    target: str

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


@dataclass(frozen=True)
class Mirror:
    source: str
    target: str
    mode: str  # active-passive | active-active
    placement: str  # target | source: the cluster whose DC MM2 runs in
    topics: str  # a Java regex of the source topics to copy
    replication_factor: int  # of the remote topics MM2 creates
    replication_policy: str  # default ("east.topic") | identity ("topic")
    offset_syncs_topic_location: str | None  # None: beside MM2
    refresh_topics_interval_s: int
    refresh_groups_interval_s: int
    sync_group_offsets: bool
    sync_group_offsets_interval_s: int
    emit_checkpoints_interval_s: int

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def flows(self) -> list[Flow]:
        out = [Flow(self.source, self.target)]
        return out + [Flow(self.target, self.source)] if self.mode == "active-active" else out

    @property
    def placed_in(self) -> str:
        """The cluster in whose DC MM2 runs."""
        return self.target if self.placement == "target" else self.source

    @property
    def offset_syncs_location(self) -> str:
        """source | target, as MM2's `offset-syncs.topic.location` takes it."""
        return self.offset_syncs_topic_location or self.placement

    @property
    def topic_prefix(self) -> str:
        """The literal start of `topics` (what MM2's ACLs can name): `dcdrill-.*` -> `dcdrill-`."""
        return re.match(r"[A-Za-z0-9_-]*", self.topics).group(0)

    def remote_topic(self, topic: str, source: str) -> str:
        """The name `source`'s topic gets in the other cluster (MM2's ReplicationPolicy)."""
        return topic if self.replication_policy == "identity" else f"{source}.{topic}"


def mirror_acls(prefix: str, clusters: list[str]) -> tuple[Acl, ...]:
    """What MM2 needs on each cluster, and no more: the mirrored topics (read them, or create and
    write their remote copies), its internal topics (`mm2-*`, `heartbeats`, `<cluster>.*`), the
    groups whose offsets it translates and syncs (`dcdrill*`), its own workers' groups."""
    every = ("all",)
    topic_prefixes = sorted({prefix, "mm2-", *(f"{c}." for c in clusters)} - {""})
    acls = [Acl(MIRROR_USER, "topic", p, "prefixed", every) for p in topic_prefixes]
    acls.append(Acl(MIRROR_USER, "topic", "heartbeats", "literal", every))
    acls += [Acl(MIRROR_USER, "group", p, "prefixed", every) for p in sorted({"dcdrill", "mm2", *clusters})]
    acls.append(Acl(MIRROR_USER, "cluster", "kafka-cluster", "literal", ("describe", "describe_configs")))
    return tuple(acls)


@dataclass(frozen=True)
class Deployment:
    clusters: tuple[Topology, ...]
    mirrors: tuple[Mirror, ...] = ()

    @property
    def home(self) -> Topology:
        """The first cluster: a stretched stack's only one, a replicated stack's source."""
        return self.clusters[0]

    @property
    def replicated(self) -> bool:
        return len(self.clusters) > 1

    @property
    def name(self) -> str:
        """The stack's clusters as one label ("east+west"), for what they share (AWS VPCs, zones)."""
        return "+".join(self.cluster_names)

    @property
    def cluster_names(self) -> list[str]:
        return [c.name for c in self.clusters]

    def cluster(self, name: str) -> Topology:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f"unknown cluster {name!r}; valid: {', '.join(self.cluster_names)}")

    @property
    def dc_names(self) -> list[str]:
        return [dc for c in self.clusters for dc in c.dc_names]

    @property
    def datacenters(self):
        return tuple(dc for c in self.clusters for dc in c.datacenters)

    def dc(self, name: str):
        return self.cluster_of_dc(name).dc(name)

    def cluster_of_dc(self, dc: str) -> Topology:
        for c in self.clusters:
            if dc in c.dc_names:
                return c
        raise KeyError(f"unknown DC {dc!r}; valid: {', '.join(self.dc_names)}")

    @property
    def flows(self) -> list[Flow]:
        return [f for m in self.mirrors for f in m.flows]

    def mirror_hosts(self) -> list[tuple[Host, Mirror]]:
        """One MM2 host per mirror, in the first broker DC of its placement cluster."""
        out = []
        for i, m in enumerate(self.mirrors, 1):
            home = self.cluster(m.placed_in) if m.placed_in in self.cluster_names else self.home
            dc = (home.broker_dcs or home.datacenters)[0].name
            out.append((Host(f"mm{i}.{dc}.{home.domain}", "kafka_mirror", dc, MIRROR_ID_BASE + i), m))
        return out

    @property
    def mirror_kafka_version(self) -> str:
        """The Kafka MirrorMaker 2 runs: the newest the stack's clusters run (its jars hold connect-mirror)."""
        return max((c.kafka_version for c in self.clusters), key=kafka_release)

    def hosts(self) -> list[Host]:
        """Every host of every cluster, then the MM2 hosts (the lab and AWS create exactly these)."""
        return [h for c in self.clusters for h in c.hosts()] + [h for h, _ in self.mirror_hosts()]

    def with_settings(self, settings: dict) -> Deployment:
        """A drill's own settings apply to every cluster (infra.topology.SETTINGS)."""
        return replace(self, clusters=tuple(c.with_settings(settings) for c in self.clusters))


def from_config(config: dict, stack: str = "", default_domain: str = "lab") -> Deployment:
    """The stack's model, validated by infra/schema.py. Mirrored clusters get MM2's principal
    and its ACLs (mirror_acls) added to their own, so the roles create and enforce them."""
    spec = schema.parse(config, f"stack {stack}" if stack else "")
    clusters = [cluster_from_spec(spec, c, default_domain) for c in spec.all_clusters]
    mirrors = tuple(
        Mirror(
            m.source,
            m.target,
            m.mode,
            m.placement,
            m.topics,
            m.replication_factor,
            m.replication_policy,
            m.offset_syncs_topic_location,
            m.refresh_topics_interval_s,
            m.refresh_groups_interval_s,
            m.sync_group_offsets,
            m.sync_group_offsets_interval_s,
            m.emit_checkpoints_interval_s,
        )
        for m in spec.mirrors
    )
    names = [c.name for c in clusters]
    first = (0, 0, 0, 0)
    for i, c in enumerate(clusters):  # host numbers go on from the previous cluster's
        clusters[i] = c = replace(c, first_ids=first)
        roles = ("zookeeper", "kafka_controller", "kafka_broker", "client")
        first = tuple(n + len(c.hosts_with_role(r)) for n, r in zip(first, roles))
    for i, c in enumerate(clusters):
        joined = [m for m in mirrors if c.name in (m.source, m.target)]
        if joined and c.sasl is not None:
            extra = {a for m in joined for a in mirror_acls(m.topic_prefix or DRILL_TOPIC_PREFIX, names)}
            clusters[i] = replace(c, acls=c.acls + tuple(sorted(extra - set(c.acls), key=repr)))
    _check_passwords(spec.passwords, clusters, f"stack {stack}: " if stack else "")
    return Deployment(tuple(clusters), mirrors)


def _check_passwords(chosen: dict | None, clusters: list[Topology], where: str) -> None:
    """Each password the user chose (dcdrill:passwords) belongs to a SASL user of one of the
    stack's clusters, as the model has them (MM2's included), and is a Pulumi secret."""
    by_name = {c.name: c for c in clusters}
    for cluster, users in (chosen or {}).items():
        c = by_name.get(cluster)
        if c is None or c.sasl is None:
            raise schema.ConfigError(
                f"{where}dcdrill:passwords.{cluster}: "
                + (f"no such cluster (this stack's: {', '.join(by_name)})" if c is None else "that cluster has no sasl")
            )
        for user, value in users.items():
            if user not in c.users:
                raise schema.ConfigError(
                    f"{where}dcdrill:passwords.{cluster}.{user}: no such SASL user (this "
                    f"cluster's: {', '.join(c.users)})"
                )
            if set(value) != {"secure"}:
                raise schema.ConfigError(
                    f"{where}dcdrill:passwords.{cluster}.{user}: not a secret; set it with "
                    f"`pulumi config set --secret --path 'dcdrill:passwords.{cluster}.{user}'`"
                )
