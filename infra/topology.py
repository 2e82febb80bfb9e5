"""The topology model: pure dataclasses built from a stack's `dcdrill:` config.

Everything else derives from this model: the Pulumi resources (lab or AWS), the Ansible
inventory, the predictions of what losing each DC does (`infra.rules`) and the verdict.
No Pulumi import here, so `dcdrill plan` and the verifier can use it offline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dcdrill.infra import schema
from dcdrill.infra.constants import ACKS, DEFAULT_KAFKA_VERSION
from dcdrill.infra.schema import (  # noqa: F401 (re-exported)
    ACL_OPERATIONS,
    ACL_PATTERNS,
    ACL_RESOURCES,
    PROFILES,
    ConfigError,
)

CONTROLLER_ID_BASE = schema.NODE_ID_SPACE  # ctl1 is node 1001: above every broker id (the schema checks)
SETTINGS = (
    "profile",
    "acks",
    "factor",
    "min_insync",
    "unclean_leader_election",
    "flush_each_write",
)  # see with_settings()


@dataclass(frozen=True)
class Datacenter:
    name: str
    brokers: int
    zookeepers: int
    region: str | None = None  # aws only
    zone: str | None = None  # aws only: the AZ name, e.g. eu-west-1a
    controllers: int = 0  # KRaft controllers (voters); a stack has these or zookeepers, never both


@dataclass(frozen=True)
class Replication:
    factor: int
    min_insync: int
    unclean_leader_election: bool
    # flush.messages=1: every replica fsyncs each write before it counts as having it. Kafka's
    # default leaves flushing to the OS and relies on replicas; a drill may set it as the control
    # of a power loss (`dcdrill drill --flush-each-write`).
    flush_each_write: bool = False


@dataclass(frozen=True)
class Sasl:
    """SCRAM-SHA-512 users on the CLIENT listener. `admin` is a super user: dcdrill's own admin
    calls (create and delete drill topics, elect leaders, status) use it. `client` is the principal
    of the workload, the audit and the probes: what the ACLs must allow."""

    admin: str = "admin"
    client: str = "workload"


@dataclass(frozen=True)
class Acl:
    """ALLOW `operations` on a resource to a SASL user, from any host (Kafka's ACL, declared)."""

    principal: str  # a user name, without the "User:" prefix
    resource: str  # ACL_RESOURCES
    name: str  # the resource name, or its prefix (pattern prefixed); kafka-cluster for cluster
    pattern: str  # ACL_PATTERNS
    operations: tuple[str, ...]

    def allows(self, principal: str, resource: str, name: str, operation: str) -> bool:
        matches = name == self.name if self.pattern == "literal" else name.startswith(self.name)
        return (
            self.principal == principal
            and self.resource == resource
            and matches
            and (operation in self.operations or "all" in self.operations)
        )


@dataclass(frozen=True)
class Host:
    """One machine of the cluster: a lab namespace or an EC2 instance."""

    name: str  # DNS-style name, e.g. b1.dc-a.lab
    role: str  # kafka_broker | zookeeper | kafka_controller | client
    dc: str
    node_id: int  # broker.id / node.id, ZooKeeper myid; client index for clients

    @property
    def short(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass(frozen=True)
class Topology:
    name: str
    backend: str
    profile: str
    coordination: str  # zookeeper | kraft
    datacenters: tuple[Datacenter, ...]
    replication: Replication
    acks: str
    domain: str = "lab"
    tls: bool = False  # TLS on every listener, with the stack's own CA (infra/pki.py)
    sasl: Sasl | None = None  # SCRAM users on CLIENT, mutual TLS between brokers, ACLs enforced
    acls: tuple[Acl, ...] = ()
    accept_risks: tuple[str, ...] = ()
    kafka_version: str = DEFAULT_KAFKA_VERSION["zookeeper"]
    # Where this cluster's host numbers start, per role (zookeeper, controller, broker, client):
    # a replicated stack's clusters share one lab, so their hosts' short names must differ.
    first_ids: tuple[int, int, int, int] = (0, 0, 0, 0)

    # -- derived facts -------------------------------------------------------------------------
    @property
    def users(self) -> list[str]:
        """The SASL users the cluster needs: the admin, the client and every ACL principal."""
        if self.sasl is None:
            return []
        return sorted({self.sasl.admin, self.sasl.client, *(a.principal for a in self.acls)})

    @property
    def dc_names(self) -> list[str]:
        return [dc.name for dc in self.datacenters]

    def dc(self, name: str) -> Datacenter:
        for dc in self.datacenters:
            if dc.name == name:
                return dc
        raise KeyError(f"unknown DC {name!r}; valid: {', '.join(self.dc_names)}")

    @property
    def broker_dcs(self) -> list[Datacenter]:
        return [dc for dc in self.datacenters if dc.brokers > 0]

    @property
    def total_brokers(self) -> int:
        return sum(dc.brokers for dc in self.datacenters)

    @property
    def total_zookeepers(self) -> int:
        return sum(dc.zookeepers for dc in self.datacenters)

    @property
    def kraft(self) -> bool:
        return self.coordination == "kraft"

    @property
    def voter_noun(self) -> str:
        return "controllers" if self.kraft else "ZooKeeper nodes"

    def voters_in(self, dc_name: str) -> int:
        """The coordination quorum's members in one DC: KRaft controllers or ZooKeeper nodes."""
        dc = self.dc(dc_name)
        return dc.controllers if self.kraft else dc.zookeepers

    @property
    def total_voters(self) -> int:
        return sum(self.voters_in(dc.name) for dc in self.datacenters)

    def replicas_in(self, dc_name: str) -> int:
        """r_d: replicas of one partition that rack-aware assignment can put in DC d.

        Kafka spreads a partition's replicas round-robin over racks, so the fullest DC holds
        ceil(factor / broker DCs); a DC never holds more replicas than it has brokers.
        """
        dc = self.dc(dc_name)
        if dc.brokers == 0 or not self.broker_dcs:
            return 0
        return min(dc.brokers, math.ceil(self.replication.factor / len(self.broker_dcs)))

    @property
    def max_replicas_per_dc(self) -> int:
        return max((self.replicas_in(dc.name) for dc in self.datacenters), default=0)

    def hosts(self) -> list[Host]:
        """Every host, numbered globally: broker ids and ZooKeeper myids start at 1; KRaft
        controllers share the brokers' node.id space, so theirs start at CONTROLLER_ID_BASE + 1.

        One client host per DC that holds brokers: producers and consumers run "in" a DC.
        """
        hosts: list[Host] = []
        zk_id, controller_id, broker_id, client_id = self.first_ids
        for dc in self.datacenters:
            for _ in range(dc.zookeepers):
                zk_id += 1
                hosts.append(Host(f"zk{zk_id}.{dc.name}.{self.domain}", "zookeeper", dc.name, zk_id))
            for _ in range(dc.controllers):
                controller_id += 1
                hosts.append(
                    Host(
                        f"ctl{controller_id}.{dc.name}.{self.domain}",
                        "kafka_controller",
                        dc.name,
                        CONTROLLER_ID_BASE + controller_id,
                    )
                )
            for _ in range(dc.brokers):
                broker_id += 1
                hosts.append(Host(f"b{broker_id}.{dc.name}.{self.domain}", "kafka_broker", dc.name, broker_id))
            if dc.brokers:
                client_id += 1
                hosts.append(Host(f"c{client_id}.{dc.name}.{self.domain}", "client", dc.name, client_id))
        return hosts

    def hosts_with_role(self, role: str) -> list[Host]:
        return [h for h in self.hosts() if h.role == role]

    def with_settings(self, settings: dict) -> Topology:
        """The same cluster under one drill's own settings (`dcdrill drill --acks --factor
        --min-insync --unclean --flush-each-write --profile`; keys: SETTINGS). They are the drill topic's settings
        and its producers', and every drill writes a fresh topic, so one lab serves them all."""
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            raise ConfigError(f"unknown drill settings {unknown}; valid: {', '.join(SETTINGS)}")
        valid = {"profile": PROFILES, "acks": ACKS}
        for key, values in valid.items():
            if key in settings and settings[key] not in values:
                raise ConfigError(f"drill setting {key} is {settings[key]!r}; valid: {', '.join(values)}")
        r = self.replication
        return replace(
            self,
            profile=settings.get("profile", self.profile),
            acks=settings.get("acks", self.acks),
            replication=Replication(
                settings.get("factor", r.factor),
                settings.get("min_insync", r.min_insync),
                settings.get("unclean_leader_election", r.unclean_leader_election),
                settings.get("flush_each_write", r.flush_each_write),
            ),
        )


def from_config(config: dict, stack: str = "", default_domain: str = "lab") -> Topology:
    """Build the model from a stack's config mapping (keys like `dcdrill:cluster`), validated by
    infra/schema.py first. The hosts' domain is the stack's `domain`, else the backend's
    (infra.stack.topology_of passes it). A replicated stack's model is infra.deployment's; this
    is its home cluster (the first of `dcdrill:clusters`, which the drill's producers write to)."""
    spec = schema.parse(config, f"stack {stack}" if stack else "")
    return cluster_from_spec(spec, spec.all_clusters[0], default_domain)


def cluster_from_spec(spec: schema.StackSpec, c: schema.ClusterSpec, default_domain: str = "lab") -> Topology:
    return Topology(
        name=c.name,
        backend=spec.backend,
        profile=spec.profile,
        coordination=c.coordination,
        datacenters=tuple(
            Datacenter(dc.name, dc.brokers, dc.zookeepers, dc.region, dc.zone, dc.controllers) for dc in c.datacenters
        ),
        replication=Replication(c.replication.factor, c.replication.min_insync, c.replication.unclean_leader_election),
        acks=c.producer.acks,
        domain=c.domain or default_domain,
        tls=c.tls,
        sasl=Sasl(c.sasl.admin, c.sasl.client) if c.sasl else None,
        acls=tuple(Acl(a.principal, a.resource, a.name, a.pattern, tuple(sorted(set(a.operations)))) for a in c.acls),
        accept_risks=tuple(spec.accept_risks),
        kafka_version=c.version,
    )
