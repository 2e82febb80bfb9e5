"""The Ansible inventory, derived from the topology model, and the one typed view of it that the
rest of dcdrill reads. The lab and AWS export the same schema:

    all.vars                         cluster-wide settings the roles read (replication, listeners,
                                     TLS, SASL users, super users, ACLs)
    all.children.zookeeper.hosts     <name>: {dc, rack, zookeeper_id, ansible_host, ...}
    all.children.kafka_controller.hosts  <name>: {dc, rack, controller_id, ansible_host, ...} (KRaft)
    all.children.kafka_broker.hosts  <name>: {dc, rack, broker_id, ansible_host, ...}
    all.children.client.hosts        <name>: {dc, client_id, ansible_host, ...}

A replicated stack has one such inventory per cluster, and one for its MirrorMaker 2 hosts
(build_mirrors):

    all.vars                         the clusters MM2 joins, each with its own secrets
                                     (kafka_mirror_clusters), TLS, SASL
    all.children.kafka_mirror.hosts  <name>: {dc, mirror_id, kafka_mirror_flows, kafka_mirror_*, ...}

A backend adds how Ansible reaches its hosts (SSH key for the lab, SSM on AWS) and host vars
of its own (the lab's namespace and data root). `Inventory` wraps the dict: code outside this
module asks it for hosts and settings instead of walking the raw mapping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dcdrill.infra import passwords, pki
from dcdrill.infra.constants import KAFKA_VERSIONS, read_state_json
from dcdrill.infra.deployment import MIRROR_USER, Deployment
from dcdrill.infra.ports import CLIENT_PORT, ZOOKEEPER_CLIENT_PORT
from dcdrill.infra.topology import Topology

SASL_MECHANISM = "SCRAM-SHA-512"
CLUSTER_ROLES = ("zookeeper", "kafka_controller", "kafka_broker", "client")
ROLES = (*CLUSTER_ROLES, "kafka_mirror")
# Every cluster of a replicated stack appends with its own time: MM2 keeps the source's timestamps,
# so with each cluster's append time in its log a copy's lag is the target's append time minus the
# source's (spark/mirrors.py).
REPLICATED_BROKER_PROPERTIES = {"log.message.timestamp.type": "LogAppendTime"}
ROLE_ID = {
    "zookeeper": "zookeeper_id",
    "kafka_controller": "controller_id",
    "kafka_broker": "broker_id",
    "client": "client_id",
    "kafka_mirror": "mirror_id",
}


def build(
    t: Topology,
    addresses: dict[str, str],
    connection: dict | None = None,
    extra_vars: dict | None = None,
    host_vars: dict[str, dict] | None = None,
) -> Inventory:
    groups: dict[str, dict] = {role: {"hosts": {}} for role in CLUSTER_ROLES}
    for h in t.hosts():
        hv = {"dc": h.dc, "rack": h.dc, ROLE_ID[h.role]: h.node_id, "ansible_host": addresses[h.name]}
        hv.update((host_vars or {}).get(h.name, {}))
        groups[h.role]["hosts"][h.name] = dict(sorted(hv.items()))
    all_vars = {
        "cluster_name": t.name,
        "backend": t.backend,
        "kafka_replication_factor": t.replication.factor,
        "kafka_min_insync_replicas": t.replication.min_insync,
        "kafka_unclean_leader_election": t.replication.unclean_leader_election,
        "kafka_broker_count": t.total_brokers,
        "kafka_coordination": t.coordination,
        "kafka_broker_zookeeper_client_port": ZOOKEEPER_CLIENT_PORT,
        "kafka_version": t.kafka_version,
        # where `make setup` put this version's jars, under the controller's cache (KAFKA_VERSIONS)
        "java_kafka_libs_folder": KAFKA_VERSIONS[t.kafka_version],
        "kafka_tls": t.tls,
        # ZooKeeper as production locks it down: TLS on its client and quorum ports, SASL
        # (DIGEST-MD5) for brokers and peers, znode ACLs. It holds the SCRAM credentials and the
        # ACLs, so it is secured whenever the cluster is (tls and sasl).
        "zookeeper_secure": t.tls and t.sasl is not None and not t.kraft,
        **sasl_vars(t),
        **(connection or {}),
        **(extra_vars or {}),
    }
    return Inventory({"all": {"vars": dict(sorted(all_vars.items())), "children": groups}})


def build_mirrors(
    d: Deployment,
    addresses: dict[str, str],
    connection: dict | None = None,
    extra_vars: dict | None = None,
    host_vars: dict[str, dict] | None = None,
) -> Inventory:
    """The MirrorMaker 2 hosts' inventory (roles/kafka_mirror): each host's mirror settings as
    host vars, the clusters it connects to as all.vars."""
    groups: dict[str, dict] = {"kafka_mirror": {"hosts": {}}}
    for h, m in d.mirror_hosts():
        hv = {
            "dc": h.dc,
            "rack": h.dc,
            "mirror_id": h.node_id,
            "ansible_host": addresses[h.name],
            "kafka_mirror_name": m.name,
            "kafka_mirror_flows": [{"source": f.source, "target": f.target} for f in m.flows],
            "kafka_mirror_topics": m.topics,
            "kafka_mirror_replication_factor": m.replication_factor,
            "kafka_mirror_replication_policy": m.replication_policy,
            "kafka_mirror_offset_syncs_topic_location": m.offset_syncs_location,
            "kafka_mirror_refresh_topics_interval_s": m.refresh_topics_interval_s,
            "kafka_mirror_refresh_groups_interval_s": m.refresh_groups_interval_s,
            "kafka_mirror_sync_group_offsets": m.sync_group_offsets,
            "kafka_mirror_sync_group_offsets_interval_s": m.sync_group_offsets_interval_s,
            "kafka_mirror_emit_checkpoints_interval_s": m.emit_checkpoints_interval_s,
            **(host_vars or {}).get(h.name, {}),
        }
        groups["kafka_mirror"]["hosts"][h.name] = dict(sorted(hv.items()))
    home = d.home
    all_vars = {
        "cluster_name": home.name,
        "backend": home.backend,
        "kafka_mirror_clusters": [
            {"alias": c.name, "bootstrap": [f"{h.name}:{CLIENT_PORT}" for h in c.hosts_with_role("kafka_broker")]}
            for c in d.clusters
        ],
        "kafka_tls": home.tls,
        "kafka_sasl": home.sasl is not None,
        # MM2's user on every cluster, with each cluster's own password and CA (infra/ansible.py
        # adds tls_dir and sasl_credentials to each of kafka_mirror_clusters)
        "kafka_mirror_user": MIRROR_USER,
        "java_kafka_libs_folder": KAFKA_VERSIONS[d.mirror_kafka_version],
        **(connection or {}),
        **(extra_vars or {}),
    }
    return Inventory({"all": {"vars": dict(sorted(all_vars.items())), "children": groups}})


def sasl_vars(t: Topology) -> dict:
    """What the roles need for SASL users and ACLs. Brokers are super users under the principal
    their certificate gives them on the mutual-TLS REPLICATION listener (infra/pki.py)."""
    if t.sasl is None:
        return {"kafka_sasl": False}
    brokers = sorted(h.name for h in t.hosts() if h.role in ("kafka_broker", "kafka_controller"))
    acls = [
        {
            "principal": f"User:{a.principal}",
            "resource": a.resource,
            "name": a.name,
            "pattern": a.pattern,
            "operations": list(a.operations),
        }
        for a in t.acls
    ]
    return {
        "kafka_sasl": True,
        "kafka_sasl_admin": t.sasl.admin,
        "kafka_sasl_client": t.sasl.client,
        "kafka_sasl_users": t.users,
        "kafka_access_acls": sorted(acls, key=lambda a: sorted(a.items())),
        "kafka_super_users": [f"User:{t.sasl.admin}"] + [pki.principal(b) for b in brokers],
    }


def merged(inventories: list[Inventory]) -> Inventory:
    """One inventory holding every host of several (a replicated stack's clusters and MM2 hosts),
    for what acts on hosts wherever they are (the fault drivers); vars are the first's."""
    groups: dict[str, dict] = {role: {"hosts": {}} for role in ROLES}
    for inv in inventories:
        for role, group in inv.data["all"]["children"].items():
            groups[role]["hosts"].update(group.get("hosts", {}))
    return Inventory({"all": {"vars": dict(inventories[0].vars), "children": groups}})


@dataclass(frozen=True)
class InventoryHost:
    name: str  # the DNS name clients and certificates use
    role: str  # ROLES
    dc: str
    node_id: int  # broker.id, ZooKeeper myid or client index
    address: str  # ansible_host: the connection's id (a lab namespace, an EC2 instance id), never dialed
    vars: dict  # every host var, the backend's own included

    @property
    def netns(self) -> str | None:
        """The lab namespace the host lives in (None on hosts that are machines of their own)."""
        return self.vars.get("netns")


class Inventory:
    """A stack's inventory: the dict Ansible reads, and typed questions about it."""

    def __init__(self, data: dict, secrets: dict | None = None):
        """`secrets`: an agent's (agent_secrets, sent with its request), held in memory; without
        them the stack's CA and passwords are read from the control's files the inventory names."""
        self.data = data
        self.secrets = secrets

    @classmethod
    def load(cls, path: Path) -> Inventory:
        data = read_state_json(Path(path), kind=dict)
        if data is None:
            raise FileNotFoundError(f"{path}: no inventory here (`dcdrill lab up` writes it)")
        return cls(data)

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True) + "\n"

    @property
    def vars(self) -> dict:
        return self.data["all"]["vars"]

    def hosts(self, *roles: str) -> list[InventoryHost]:
        """The hosts of these roles (all roles when none is named), by name within each role."""
        out = []
        for role in roles or ROLES:
            for name, hv in sorted(self.data["all"]["children"].get(role, {}).get("hosts", {}).items()):
                out.append(InventoryHost(name, role, hv["dc"], hv[ROLE_ID[role]], hv["ansible_host"], hv))
        return out

    @property
    def brokers(self) -> list[InventoryHost]:
        return self.hosts("kafka_broker")

    def zookeeper_tls(self):
        """The TLS context a locked-down ZooKeeper's client port is checked with (None: plain)."""
        av = self.vars
        if not (av.get("zookeeper_secure") and av.get("kafka_tls_dir")):
            return None
        return self._ca_context()

    def _ca_context(self):
        import ssl

        if self.secrets is not None:
            return ssl.create_default_context(cadata=self.secrets["ca_pem"])
        return ssl.create_default_context(cafile=f"{self.vars['kafka_tls_dir']}/ca.pem")

    def agent_secrets(self, users: tuple[str, ...] = ("admin",)) -> dict:
        """What an agent on a client host needs to reach the cluster, read here on the control and
        sent with its request (infra/observe/hostaccess.py payload): the stack's CA and the passwords
        of the SASL `users` ("admin", "client") its call connects as, no other. The host has no copy
        of the control's files, on AWS as on the lab."""
        av, out = self.vars, {}
        if av.get("kafka_tls") or av.get("zookeeper_secure"):
            out["ca_pem"] = Path(av["kafka_tls_dir"], "ca.pem").read_text() if av.get("kafka_tls_dir") else None
        if av.get("kafka_sasl"):
            names = {"admin": av["kafka_sasl_admin"], "client": av["kafka_sasl_client"]}
            out["passwords"] = {
                names[u]: passwords.password(av["kafka_sasl_credentials"], names[u]) for u in sorted(set(users))
            }
        return out

    @property
    def zookeepers(self) -> list[InventoryHost]:
        return self.hosts("zookeeper")

    @property
    def controllers(self) -> list[InventoryHost]:
        return self.hosts("kafka_controller")

    @property
    def kraft(self) -> bool:
        return self.vars.get("kafka_coordination") == "kraft"

    @property
    def voters(self) -> list[InventoryHost]:
        """The coordination quorum's members: KRaft controllers or ZooKeeper nodes."""
        return self.controllers if self.kraft else self.zookeepers

    @property
    def clients(self) -> list[InventoryHost]:
        return self.hosts("client")

    def in_dc(self, dc: str, roles=("zookeeper", "kafka_controller", "kafka_broker")) -> list[InventoryHost]:
        """One DC's hosts of these roles, in the order given (the quorum's first: heal starts it first)."""
        return [h for h in self.hosts(*roles) if h.dc == dc]

    def bootstrap_servers(self, port: int = CLIENT_PORT) -> list[str]:
        return [f"{h.name}:{port}" for h in self.brokers]

    def client_security(self, admin: bool = False) -> dict:
        """kafka-python's settings for the CLIENT listener: {} for PLAINTEXT; with TLS, the stack's CA
        (kafka_tls_dir, written by infra/ansible.py) and hostname checks against the brokers' names;
        with SASL, the client user (the workload's) or, `admin`, the admin user, and its password from
        kafka_sasl_credentials (see process_security for child processes)."""
        av = self.vars
        out: dict = {}
        if av.get("kafka_tls") and self.secrets is not None:  # an agent: the CA in memory
            out = {"security_protocol": "SSL", "ssl_context": self._ca_context(), "ssl_check_hostname": True}
        elif av.get("kafka_tls"):
            if not av.get("kafka_tls_dir"):
                raise ValueError(
                    "the inventory says TLS but names no kafka_tls_dir: configure the stack first "
                    "(`dcdrill lab up`), which makes its CA"
                )
            out = {
                "security_protocol": "SSL",
                "ssl_cafile": f"{av['kafka_tls_dir']}/ca.pem",
                "ssl_check_hostname": True,
            }
        if av.get("kafka_sasl"):
            user = av["kafka_sasl_admin"] if admin else av["kafka_sasl_client"]
            if self.secrets is None:
                password = passwords.password(av["kafka_sasl_credentials"], user)
            elif user in self.secrets.get("passwords", {}):
                password = self.secrets["passwords"][user]
            else:
                raise ValueError(f"this call was not sent {user}'s password (hostaccess.CALL_USERS)")
            out |= {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": SASL_MECHANISM,
                "sasl_plain_username": user,
                "sasl_plain_password": password,
            }
        return out

    def process_security(self) -> dict:
        """client_security for the workload's processes, whose settings travel on their command
        line: the password is left out and handed to each on its stdin (validation/workload.py),
        so that no process is given a file of every user's passwords."""
        out = self.client_security()
        if "sasl_plain_password" in out:
            out["sasl_plain_password"] = None
            out["sasl_password_stdin"] = True
        return out
