"""The Ansible inventory, derived from the topology model. The lab and AWS export the same schema:

    all.vars                      cluster-wide settings the roles read (replication, listeners, TLS)
    all.children.zookeeper.hosts  <name>: {dc, rack, zookeeper_id, ansible_host}
    all.children.kafka_broker.hosts  <name>: {dc, rack, broker_id, ansible_host}
    all.children.client.hosts     <name>: {dc, ansible_host}

`connection` adds how Ansible reaches the hosts (SSH key for the lab, SSM on AWS).
"""
from __future__ import annotations

from infra.topology import Topology

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
        **(connection or {}),
        **(extra_vars or {}),
    }
    return {"all": {"vars": dict(sorted(all_vars.items())), "children": groups}}


def bootstrap_servers(inventory: dict, port: int = 9092) -> list[str]:
    hosts = inventory["all"]["children"]["kafka_broker"]["hosts"]
    return [f"{name}:{port}" for name in sorted(hosts)]


def client_security(inventory: dict) -> dict:
    """kafka-python's settings for the CLIENT listener: {} for PLAINTEXT; with TLS, the stack's CA
    (kafka_tls_dir, written by infra/configure.py) and hostname checks against the brokers' names."""
    av = inventory["all"]["vars"]
    if not av.get("kafka_tls"):
        return {}
    if not av.get("kafka_tls_dir"):
        raise ValueError("the inventory says TLS but names no kafka_tls_dir: configure the stack first "
                         "(`dcdrill lab up`), which makes its CA")
    return {"security_protocol": "SSL", "ssl_cafile": f"{av['kafka_tls_dir']}/ca.pem", "ssl_check_hostname": True}
