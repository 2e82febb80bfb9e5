"""The probes a client host runs for the control: the cluster's status, the coordination sample
and the MirrorMaker 2 nodes, asked of the cluster from inside its DCs. infra/observe/agent.py
calls them; the control asks through infra/observe/status.py and never dials the cluster itself.

Brokers are alive when their CLIENT port answers and the cluster metadata lists them. The
coordination quorum: ZooKeeper nodes report their mode through the `srvr` four-letter word; KRaft
controllers through the metadata log's DescribeQuorum (asked of a broker, which forwards it to the
active controller): its leader, and each voter's last fetch and lag behind the high watermark.
"""

from __future__ import annotations

import socket
import ssl
from contextlib import closing

from dcdrill.infra.constants import now_ms
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.ports import CLIENT_PORT, CONTROLLER_PORT, MIRROR_REST_PORT, ZOOKEEPER_CLIENT_PORT


def _tcp_ok(host: str, port: int, timeout_s: float) -> bool:
    try:
        with closing(socket.create_connection((host, port), timeout=timeout_s)):
            return True
    except OSError:
        return False


def zookeeper_mode(
    host: str, port: int = ZOOKEEPER_CLIENT_PORT, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None
) -> str | None:
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


def _reachable(inventory: Inventory, timeout_s: float) -> list[str]:
    """host:port of the brokers whose CLIENT port answers, probed at once: a cut-off host costs
    its timeout once, not once per host."""
    from concurrent.futures import ThreadPoolExecutor

    names = [h.name for h in inventory.brokers]
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(names)))) as pool:
        up = list(pool.map(lambda name: _tcp_ok(name, CLIENT_PORT, timeout_s), names))
    return [f"{name}:{CLIENT_PORT}" for name, ok in zip(names, up) if ok]


def _live_ids(cluster: dict | None) -> list[int] | None:
    """The broker ids a DescribeCluster answer counts as live, sorted (None: no answer). On KRaft
    it lists fenced brokers too (KIP-1073): they are not live."""
    if cluster is None:
        return None
    return sorted(b["broker_id"] for b in cluster.get("brokers", []) if not b.get("is_fenced"))


def _metadata(
    bootstrap: list[str], timeout_s: float, security: dict, kraft: bool
) -> tuple[dict | None, list | None, dict | None, str | None]:
    """(cluster, topics, KRaft quorum or None, error)."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=int(timeout_s * 1000),
            bootstrap_timeout_ms=int(timeout_s * 1000),
            client_id="dcdrill-status",
            **security,
        )
    except Exception as exc:  # noqa: BLE001 - any client failure means "no metadata"
        return None, None, None, f"no broker answered: {exc}"
    try:
        cluster, topics = admin.describe_cluster(), admin.describe_topics()
        quorum = None
        if kraft:
            try:
                quorum = admin.describe_metadata_quorum()
            except Exception:  # noqa: BLE001 - no active controller to answer: no quorum
                quorum = None
        return cluster, topics, quorum, None
    except Exception as exc:  # noqa: BLE001
        return None, None, None, f"metadata request failed: {exc}"
    finally:
        admin.close()


# A voter that has not fetched from the leader for this long is counted out (KRaft fetches every
# few hundred ms; controller.quorum.fetch.timeout.ms is 2 s).
VOTER_STALE_MS = 5_000


def zookeeper_quorum(inventory: Inventory) -> dict:
    hosts = inventory.zookeepers
    tls = inventory.zookeeper_tls()
    modes = {h.name: zookeeper_mode(h.name, tls=tls) for h in hosts}
    serving = [m for m in modes.values() if m in ("leader", "follower", "standalone")]
    leader = next((name for name, m in modes.items() if m in ("leader", "standalone")), None)
    return {
        "kind": "zookeeper",
        "alive": len(serving),
        "total": len(hosts),
        "leader": leader,
        "quorum": len(serving) >= len(hosts) // 2 + 1 and leader is not None,
        "nodes": [{"host": h.name, "dc": h.dc, "mode": modes[h.name]} for h in hosts],
    }


def kraft_quorum(inventory: Inventory, described: dict | None) -> dict:
    """The controller quorum from DescribeQuorum (None: nobody answered, so no active controller).
    A voter is serving when its CONTROLLER port answers and it leads, or fetched lately."""
    hosts = inventory.controllers
    part = ((described or {}).get("topics") or [{}])[0].get("partitions", [{}])[0] if described else {}
    leader_id = part.get("leader_id", -1)
    voters = {v["replica_id"]: v for v in part.get("current_voters", [])}
    hw, now = part.get("high_watermark", 0), now_ms()
    nodes = []
    for h in hosts:
        v = voters.get(h.node_id)
        up = _tcp_ok(h.name, CONTROLLER_PORT, 1.0)
        if not up or v is None:
            mode = None if not up else "not a voter"
        elif h.node_id == leader_id:
            mode = "leader"
        else:
            mode = "follower" if now - (v.get("last_fetch_timestamp") or 0) <= VOTER_STALE_MS else "stale"
        nodes.append(
            {
                "host": h.name,
                "dc": h.dc,
                "mode": mode,
                "id": h.node_id,
                "lag": None if v is None else max(0, hw - v["log_end_offset"]),
            }
        )
    serving = [n for n in nodes if n["mode"] in ("leader", "follower")]
    leader = next((n["host"] for n in nodes if n["mode"] == "leader"), None)
    return {
        "kind": "kraft",
        "alive": len(serving),
        "total": len(hosts),
        "leader": leader,
        "leader_epoch": part.get("leader_epoch"),
        "quorum": leader is not None and len(serving) >= len(voters or hosts) // 2 + 1,
        "nodes": nodes,
    }


def cluster_status_here(inventory: Inventory, timeout_s: float = 5.0) -> dict:
    broker_hosts = sorted(inventory.brokers, key=lambda h: h.node_id)
    dc_of = {h.node_id: h.dc for h in broker_hosts}
    reachable = _reachable(inventory, 1.0)
    cluster, topics, described, error = (
        _metadata(reachable, timeout_s, inventory.client_security(admin=True), inventory.kraft)
        if reachable
        else (None, None, None, "no broker reachable")
    )
    registered = set(_live_ids(cluster) or [])
    brokers = [
        {
            "id": h.node_id,
            "dc": h.dc,
            "host": h.name,
            "alive": f"{h.name}:{CLIENT_PORT}" in reachable and h.node_id in registered,
            # apart, for a wait's diagnosis: a port that answers for a broker the cluster does not list
            "reachable": f"{h.name}:{CLIENT_PORT}" in reachable,
            "registered": h.node_id in registered,
        }
        for h in broker_hosts
    ]

    quorum = kraft_quorum(inventory, described) if inventory.kraft else zookeeper_quorum(inventory)

    alive_ids = {b["id"] for b in brokers if b["alive"]}
    partitions = []
    for t in sorted(topics or [], key=lambda t: t["name"]):
        for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
            leader = p["leader_id"]
            partitions.append(
                {
                    "topic": t["name"],
                    "partition": p["partition_index"],
                    "leader": leader if leader in alive_ids else -1,
                    "replicas": list(p["replica_nodes"]),
                    "isr": list(p["isr_nodes"]),
                    "leader_dc": dc_of.get(leader),
                    "replica_dcs": [dc_of.get(r) for r in p["replica_nodes"]],
                    "isr_dcs": [dc_of.get(r) for r in p["isr_nodes"]],
                }
            )
    return {
        "brokers": brokers,
        # ZooKeeper mode: the controller broker. KRaft: a broker the cluster names to clients
        # (KIP-590 forwards their requests); the active controller is quorum["leader"].
        "controller": (cluster or {}).get("controller_id"),
        "quorum": quorum,
        "partitions": partitions,
        "offline_partitions": sum(1 for p in partitions if p["leader"] == -1),
        "under_replicated_partitions": sum(1 for p in partitions if len(p["isr"]) < len(p["replicas"])),
        # Led by another replica than the first of its assignment (Kafka's preferred leader):
        # where a failover left it, until an election moves it back.
        "off_preferred_leader": sum(
            1 for p in partitions if p["leader"] != -1 and p["replicas"] and p["leader"] != p["replicas"][0]
        ),
        "error": error,
        "bootstrap": inventory.bootstrap_servers(),
    }


def coordination_sample_here(
    inventory: Inventory, timeout_s: float = 2.0, attempts: int = 3, topic: str | None = None
) -> dict:
    """A light look at the coordination alone, cheap enough to take every second of a drill:
    the quorum's leader (the ZooKeeper ensemble's, or the active KRaft controller) and its epoch,
    the voters serving, and the brokers the cluster counts as live: registered, and on KRaft not
    fenced. A killed broker leaves that list when its ZooKeeper session expires or, on KRaft, when
    the controller fences it; the drill's coordination log (RECORD.md) is a series of these.

    Right after a DC is lost the client may pick one of its brokers for the request (the metadata
    still lists it): a failed attempt is retried with a new client, and a sample nobody answered
    says so (`answered` false) rather than passing for a quorum without a leader. A broker that
    answers while the KRaft quorum does not (no active controller) is a sample without quorum.
    `quorum`: a leader with a majority of the voters serving (a leader cut off from the others
    has none). `topic`: also how many of its partitions have every replica in sync (`isr`), so a
    fault's ISR snapshot is the last sample, with no call of its own on the way to the fault."""
    import random

    from kafka.admin import KafkaAdminClient

    asked = now_ms()
    reachable = _reachable(inventory, 0.5)
    zk = None if inventory.kraft else zookeeper_quorum(inventory)
    cluster = described = error = quorum_error = isr = None
    for _ in range(attempts if reachable else 0):
        random.shuffle(reachable)
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=reachable,
                request_timeout_ms=int(timeout_s * 1000),
                bootstrap_timeout_ms=int(timeout_s * 1000),
                client_id="dcdrill-watch",
                **inventory.client_security(admin=True),
            )
        except Exception as exc:  # noqa: BLE001 - nobody answered this time
            error = f"{type(exc).__name__}: {exc}"
            continue
        try:
            cluster = admin.describe_cluster()
            error = None
        except Exception as exc:  # noqa: BLE001 - a request sent to a lost broker: try again
            error = f"{type(exc).__name__}: {exc}"
            continue
        else:
            # A broker answered; the quorum's answer comes from the active controller, and none
            # answering (a timeout) is itself the news: no active controller.
            if inventory.kraft:
                try:
                    described = admin.describe_metadata_quorum()
                except Exception as exc:  # noqa: BLE001
                    quorum_error = f"{type(exc).__name__}: {exc}"
            if topic:
                isr = _in_sync(admin, topic)
            break
        finally:
            admin.close()
    if not reachable:
        error = "no broker reachable"
    quorum = kraft_quorum(inventory, described) if inventory.kraft else zk
    live = _live_ids(cluster)
    return {
        "at_ms": now_ms(),
        "asked_ms": asked,
        "leader": quorum["leader"],
        "epoch": quorum.get("leader_epoch"),
        "serving": quorum["alive"],
        "total": quorum["total"],
        "quorum": quorum["quorum"],
        # ZooKeeper's leader comes from the nodes themselves; KRaft's from the cluster's answer.
        "answered": error is None,
        "error": error or quorum_error,
        "brokers": live,
        "controller": None if cluster is None or inventory.kraft else cluster.get("controller_id"),
        **({"isr": isr} if topic else {}),
    }


def _in_sync(admin, topic: str) -> dict | None:
    """{partitions, in_sync} of `topic`: how many partitions have every replica in sync. None when
    the topic is not there or the request failed (the sample goes on without it)."""
    try:
        parts = [p for t in admin.describe_topics([topic]) if t.get("error_code", 0) == 0 for p in t["partitions"]]
    except Exception:  # noqa: BLE001
        return None
    if not parts:
        return None
    return {"partitions": len(parts), "in_sync": sum(len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in parts)}


def mirror_status_here(inventory: Inventory, timeout_s: float = 2.0) -> list[dict]:
    """Each MirrorMaker 2 node of a replicated stack's MM2 inventory: alive while its internal
    REST listener answers (the role waits for it; a killed MM2 closes it)."""
    return [
        {
            "name": h.name,
            "dc": h.dc,
            "mirror": h.vars.get("kafka_mirror_name"),
            "alive": _tcp_ok(h.name, MIRROR_REST_PORT, timeout_s),
        }
        for h in inventory.hosts("kafka_mirror")
    ]
