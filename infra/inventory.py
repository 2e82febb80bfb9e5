"""The Ansible inventory, derived from the topology model. The lab and AWS export the same schema:

    all.vars                      cluster-wide settings the roles read (replication, listeners,
                                  TLS, SASL users, super users, ACLs)
    all.children.zookeeper.hosts  <name>: {dc, rack, zookeeper_id, ansible_host}
    all.children.kafka_broker.hosts  <name>: {dc, rack, broker_id, ansible_host}
    all.children.client.hosts     <name>: {dc, ansible_host}

`connection` adds how Ansible reaches the hosts (SSH key for the lab, SSM on AWS).
"""
from __future__ import annotations

from infra import pki
from infra.topology import Topology

SASL_MECHANISM = "SCRAM-SHA-512"

ROLE_ID = {"zookeeper": "zookeeper_id", "kafka_broker": "broker_id", "client": "client_id"}


def build(t: Topology, addresses: dict[str, str], connection: dict | None = None,
          extra_vars: dict | None = None, host_vars: dict[str, dict] | None = None) -> dict:
    groups: dict[str, dict] = {"zookeeper": {"hosts": {}}, "kafka_broker": {"hosts": {}}, "client": {"hosts": {}}}
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
        "kafka_tls": t.tls,
        **sasl_vars(t),
        **(connection or {}),
        **(extra_vars or {}),
    }
    return {"all": {"vars": dict(sorted(all_vars.items())), "children": groups}}


def sasl_vars(t: Topology) -> dict:
    """What the roles need for SASL users and ACLs. Brokers are super users under the principal
    their certificate gives them on the mutual-TLS REPLICATION listener (infra/pki.py)."""
    if t.sasl is None:
        return {"kafka_sasl": False}
    brokers = sorted(h.name for h in t.hosts() if h.role == "kafka_broker")
    acls = [{"principal": f"User:{a.principal}", "resource": a.resource, "name": a.name, "pattern": a.pattern,
             "operations": list(a.operations)} for a in t.acls]
    return {"kafka_sasl": True, "kafka_sasl_admin": t.sasl.admin, "kafka_sasl_client": t.sasl.client,
            "kafka_sasl_users": t.users, "kafka_acls": sorted(acls, key=lambda a: sorted(a.items())),
            "kafka_super_users": [f"User:{t.sasl.admin}"] + [pki.principal(b) for b in brokers]}


def bootstrap_servers(inventory: dict, port: int = 9092) -> list[str]:
    hosts = inventory["all"]["children"]["kafka_broker"]["hosts"]
    return [f"{name}:{port}" for name in sorted(hosts)]


def client_security(inventory: dict, admin: bool = False) -> dict:
    """kafka-python's settings for the CLIENT listener: {} for PLAINTEXT; with TLS, the stack's CA
    (kafka_tls_dir, written by infra/configure.py) and hostname checks against the brokers' names;
    with SASL, the client user (the workload's) or, `admin`, the admin user, and its password from
    kafka_sasl_credentials (see process_security for child processes)."""
    av = inventory["all"]["vars"]
    out: dict = {}
    if av.get("kafka_tls"):
        if not av.get("kafka_tls_dir"):
            raise ValueError("the inventory says TLS but names no kafka_tls_dir: configure the stack first "
                             "(`dcdrill lab up`), which makes its CA")
        out = {"security_protocol": "SSL", "ssl_cafile": f"{av['kafka_tls_dir']}/ca.pem", "ssl_check_hostname": True}
    if av.get("kafka_sasl"):
        user = av["kafka_sasl_admin"] if admin else av["kafka_sasl_client"]
        out |= {"security_protocol": "SASL_SSL", "sasl_mechanism": SASL_MECHANISM, "sasl_plain_username": user,
                "sasl_plain_password": pki.password(av["kafka_sasl_credentials"], user)}
    return out


def process_security(inventory: dict) -> dict:
    """client_security for the workload's child processes, whose settings travel on their command
    line: the password stays in its file (`kafka_sasl_credentials`), read by the child
    (validation.clients.resolve_security)."""
    out = client_security(inventory)
    if "sasl_plain_password" in out:
        out["sasl_plain_password"] = None
        out["sasl_credentials"] = inventory["all"]["vars"]["kafka_sasl_credentials"]
    return out
