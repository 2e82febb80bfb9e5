"""`dcdrill status`: what the cluster looks like right now, from the inventory's point of view.

Brokers are alive when their CLIENT port answers and the cluster metadata lists them;
ZooKeeper nodes report their mode through the `srvr` four-letter word.
"""
from __future__ import annotations

import socket
import ssl
from contextlib import closing

from infra.constants import CLIENT_PORT, ZOOKEEPER_CLIENT_PORT
from infra.inventory import Inventory


def _tcp_ok(host: str, port: int, timeout_s: float) -> bool:
    try:
        with closing(socket.create_connection((host, port), timeout=timeout_s)):
            return True
    except OSError:
        return False


def zookeeper_mode(host: str, port: int = ZOOKEEPER_CLIENT_PORT, timeout_s: float = 2.0,
                   tls: ssl.SSLContext | None = None) -> str | None:
    """leader / follower / standalone, or None when the node does not answer. `tls`: a locked
    down ZooKeeper's client port speaks TLS only (the four-letter words too)."""
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
        with closing(tls.wrap_socket(raw, server_hostname=host) if tls else raw) as s:
            s.sendall(b"srvr")
            s.settimeout(timeout_s)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
    except OSError:
        return None
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None  # "This ZooKeeper instance is not currently serving requests": no quorum


def _metadata(bootstrap: list[str], timeout_s: float, security: dict) -> tuple[dict | None, list | None, str | None]:
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000),
                                 bootstrap_timeout_ms=int(timeout_s * 1000), client_id="dcdrill-status", **security)
    except Exception as exc:  # noqa: BLE001 - any client failure means "no metadata"
        return None, None, f"no broker answered: {exc}"
    try:
        return admin.describe_cluster(), admin.describe_topics(), None
    except Exception as exc:  # noqa: BLE001
        return None, None, f"metadata request failed: {exc}"
    finally:
        admin.close()


def cluster_status(inventory: Inventory, timeout_s: float = 5.0) -> dict:
    broker_hosts = sorted(inventory.brokers, key=lambda h: h.node_id)
    dc_of = {h.node_id: h.dc for h in broker_hosts}
    reachable = [f"{h.name}:{CLIENT_PORT}" for h in inventory.brokers if _tcp_ok(h.name, CLIENT_PORT, 1.0)]
    cluster, topics, error = _metadata(reachable, timeout_s, inventory.client_security(admin=True)) if reachable \
        else (None, None, "no broker reachable")
    registered = {b["broker_id"] for b in (cluster or {}).get("brokers", [])}
    brokers = [{"id": h.node_id, "dc": h.dc, "host": h.name,
                "alive": f"{h.name}:{CLIENT_PORT}" in reachable and h.node_id in registered} for h in broker_hosts]

    zk_hosts = inventory.zookeepers
    tls = ssl.create_default_context(cafile=inventory.zookeeper_ca) if inventory.zookeeper_ca else None
    modes = {h.name: zookeeper_mode(h.name, tls=tls) for h in zk_hosts}
    serving = [m for m in modes.values() if m in ("leader", "follower", "standalone")]
    zookeeper = {"alive": len(serving), "total": len(zk_hosts),
                 "quorum": len(serving) >= len(zk_hosts) // 2 + 1 and any(m in ("leader", "standalone") for m in serving),
                 "nodes": [{"host": h.name, "dc": h.dc, "mode": modes[h.name]} for h in zk_hosts]}

    alive_ids = {b["id"] for b in brokers if b["alive"]}
    partitions = []
    for t in sorted(topics or [], key=lambda t: t["name"]):
        for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
            leader = p["leader_id"]
            partitions.append({
                "topic": t["name"], "partition": p["partition_index"],
                "leader": leader if leader in alive_ids else -1,
                "replicas": list(p["replica_nodes"]), "isr": list(p["isr_nodes"]),
                "leader_dc": dc_of.get(leader), "replica_dcs": [dc_of.get(r) for r in p["replica_nodes"]],
                "isr_dcs": [dc_of.get(r) for r in p["isr_nodes"]],
            })
    return {
        "brokers": brokers,
        "controller": (cluster or {}).get("controller_id"),
        "zookeeper": zookeeper,
        "partitions": partitions,
        "offline_partitions": sum(1 for p in partitions if p["leader"] == -1),
        "under_replicated_partitions": sum(1 for p in partitions if len(p["isr"]) < len(p["replicas"])),
        # Led by another replica than the first of its assignment (Kafka's preferred leader):
        # where a failover left it, until an election moves it back.
        "off_preferred_leader": sum(1 for p in partitions
                                    if p["leader"] != -1 and p["replicas"] and p["leader"] != p["replicas"][0]),
        "error": error,
        "bootstrap": inventory.bootstrap_servers(),
    }


def healthy(status: dict) -> bool:
    return (all(b["alive"] for b in status["brokers"]) and status["zookeeper"]["quorum"]
            and status["zookeeper"]["alive"] == status["zookeeper"]["total"]
            and status["offline_partitions"] == 0 and status["under_replicated_partitions"] == 0
            and status["error"] is None)


def render(status: dict) -> str:
    lines = ["brokers:"]
    for b in status["brokers"]:
        lines.append(f"  {b['id']:>3} {b['dc']:<8} {b['host']:<24} {'alive' if b['alive'] else 'DOWN'}")
    zk = status["zookeeper"]
    lines.append(f"zookeeper: {zk['alive']}/{zk['total']} serving, quorum {'yes' if zk['quorum'] else 'NO'}")
    for n in zk["nodes"]:
        lines.append(f"  {n['host']:<24} {n['mode'] or 'DOWN'}")
    lines.append(f"partitions: {len(status['partitions'])}, offline {status['offline_partitions']}, "
                 f"under-replicated {status['under_replicated_partitions']}, "
                 f"off their preferred leader {status['off_preferred_leader']}")
    for p in status["partitions"]:
        if not p["topic"].startswith("__"):
            lines.append(f"  {p['topic']}-{p['partition']}: leader {p['leader']} ({p['leader_dc']}) "
                         f"replicas {p['replicas']} isr {p['isr']} dcs {p['isr_dcs']}")
    if status["error"]:
        lines.append(f"error: {status['error']}")
    return "\n".join(lines)
