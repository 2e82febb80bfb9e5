"""Who may reach whom: one stack's network policy, derived from its topology. Each flow is a
source role, a target role, a TCP port and why. AWS renders its security groups from this table
(infra/aws/security.py); what dcdrill itself dials declares the flows it needs (`NEEDED`), and
`missing` says which of them a table lacks, which `dcdrill plan` refuses.

Roles are the inventory's (infra/inventory.py ROLES); `client` is the stack's client hosts, where
the drill's producers, consumers, audit and probes run, and CLIENT_NETWORKS the stack's own
clients outside it (`dcdrill:aws.clientCidrs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dcdrill.infra.deployment import Deployment
from dcdrill.infra.ports import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    MIRROR_REST_PORT,
    REPLICATION_PORT,
    ZOOKEEPER_CLIENT_PORT,
    ZOOKEEPER_PORTS,
)

CLIENT_NETWORKS = "client-networks"


@dataclass(frozen=True, order=True)
class Flow:
    source: str
    target: str
    port: int
    why: str

    @property
    def key(self) -> tuple[str, str, int]:
        return self.source, self.target, self.port

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}:{self.port}"


def _candidates() -> list[Flow]:
    zk_peers = "ZooKeeper peers: the quorum's client, follower and election ports"
    return [
        Flow("kafka_broker", "zookeeper", ZOOKEEPER_CLIENT_PORT, "brokers keep the cluster's metadata in ZooKeeper"),
        *(Flow("zookeeper", "zookeeper", port, zk_peers) for port in ZOOKEEPER_PORTS),
        Flow(
            "kafka_broker", "kafka_controller", CONTROLLER_PORT, "brokers fetch the metadata log from the KRaft quorum"
        ),
        Flow("kafka_controller", "kafka_controller", CONTROLLER_PORT, "KRaft controllers replicate the metadata log"),
        Flow("kafka_broker", "kafka_broker", REPLICATION_PORT, "followers fetch from leaders on REPLICATION"),
        Flow(
            "kafka_broker",
            "kafka_broker",
            CLIENT_PORT,
            "Kafka's tools on a broker host (topics, SCRAM users) reach the controller's CLIENT listener",
        ),
        Flow(
            "client",
            "kafka_broker",
            CLIENT_PORT,
            "the drill's producers, consumers, audit, status probes and cluster operations; the ACL play",
        ),
        Flow(CLIENT_NETWORKS, "kafka_broker", CLIENT_PORT, "the stack's own clients (clientCidrs)"),
        Flow("client", "zookeeper", ZOOKEEPER_CLIENT_PORT, "the coordination watch and the quorum probe"),
        Flow("client", "kafka_controller", CONTROLLER_PORT, "the quorum probe (is each controller listening)"),
        Flow("kafka_mirror", "kafka_broker", CLIENT_PORT, "MirrorMaker 2 reads the source and writes the target"),
        Flow(
            "kafka_mirror", "kafka_mirror", MIRROR_REST_PORT, "MM2 nodes forward task configs to their leader (KIP-710)"
        ),
        Flow("client", "kafka_mirror", MIRROR_REST_PORT, "the MM2 status probe"),
    ]


def roles(d: Deployment) -> set[str]:
    return {h.role for h in d.hosts()}


def table(d: Deployment) -> list[Flow]:
    """The stack's flows: each candidate whose source and target roles the stack has."""
    present = roles(d) | {CLIENT_NETWORKS}
    return sorted(f for f in _candidates() if f.source in present and f.target in present)


# What dcdrill's own code dials, by the module that dials it: each must be in the table wherever
# its target role exists (`missing`).
NEEDED = {
    "infra/observe/host_probes.py cluster_status": ("client", "kafka_broker", CLIENT_PORT),
    "infra/observe/host_probes.py zookeeper_quorum": ("client", "zookeeper", ZOOKEEPER_CLIENT_PORT),
    "infra/observe/host_probes.py kraft_quorum": ("client", "kafka_controller", CONTROLLER_PORT),
    "infra/observe/host_probes.py mirror_status": ("client", "kafka_mirror", MIRROR_REST_PORT),
    "validation/ (producers, consumers, audit)": ("client", "kafka_broker", CLIENT_PORT),
    "infra/observe/kafka_admin.py (topics, elections, offsets, canary; the ACL play)": (
        "client",
        "kafka_broker",
        CLIENT_PORT,
    ),
}


# The control (a CI runner on AWS, the lab's root namespace) dials no port of the cluster: what
# it asks of the cluster runs as an agent on a client host (infra/observe/agent.py, infra/observe/kafka_admin.py),
# started through host access, which is the firewall's only admission of the control.


def missing(d: Deployment, flows: list[Flow]) -> list[str]:
    """The flows dcdrill needs on this stack that `flows` lacks, each with the code that needs it."""
    have, present = {f.key for f in flows}, roles(d)
    return [
        f"{src} -> {dst}:{port} (needed by {who})"
        for who, (src, dst, port) in NEEDED.items()
        if dst in present and (src, dst, port) not in have
    ]
