"""Where every lab host lives: addresses, namespaces and the inventory. Pure: `dcdrill plan`
computes it offline, the Pulumi program (infra/lab/program.py) creates exactly this."""

from __future__ import annotations

import sys
from pathlib import Path

from dcdrill.infra import inventory, java_archive
from dcdrill.infra.constants import KAFKA_VERSIONS, state_dir
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.lab import netns, shaper, sshd
from dcdrill.infra.topology import Topology

# Every lab service runs as a uid of its own, so that no broker, controller, ZooKeeper or MM2 node
# can read another's keys (each host's folder is 0750, its key 0600): as on AWS, where each is a
# machine of its own. The uid is its address's last two bytes above this base; none has a passwd
# entry, so the lab adds no user to this machine.
SERVICE_UID_BASE = 200_000
SERVICE_USER_VAR = {
    "zookeeper": "zookeeper_service_user",
    "kafka_controller": "kafka_broker_service_user",
    "kafka_broker": "kafka_broker_service_user",
    "kafka_mirror": "kafka_mirror_service_user",
}


def service_uid(address: str) -> int:
    """The uid of the service at a lab address (prefix.dc.host): unique within the lab."""
    dc, host = (int(x) for x in address.split(".")[-2:])
    return SERVICE_UID_BASE + dc * 256 + host


def require_reachable(cache: Path) -> None:
    """The services' unprivileged uids read the Kafka jars in the cache and write their hosts'
    folders in the state folder: every folder above each must let others through (o+x)."""
    from dcdrill.infra.lab.netns import LabUnavailable

    for folder in [cache.resolve(), *cache.resolve().parents]:
        if folder.exists() and not folder.stat().st_mode & 0o001:
            raise LabUnavailable(
                f"the lab's services run as unprivileged uids (from {SERVICE_UID_BASE}), which "
                f"cannot enter {folder} (mode {oct(folder.stat().st_mode & 0o777)}): "
                f"chmod o+x {folder}, or clone dcdrill somewhere they can reach"
            )


def dc_index(t: Topology | Deployment, dc: str) -> int:
    return t.dc_names.index(dc) + 1


def link_table(t: Topology | Deployment, settings) -> shaper.LinkTable:
    """Every ordered DC pair's shape: the lab-wide latency, jitter and loss, then each
    `links` entry's own values for its pair (both directions)."""
    base = shaper.LinkShape(settings.latency_ms, settings.jitter_ms, settings.loss_pct)
    table = {(a, b): base for a in range(1, len(t.dc_names) + 1) for b in range(1, len(t.dc_names) + 1) if a != b}
    for link in settings.links:
        a, b = (dc_index(t, dc) for dc in link.between)
        shape = shaper.LinkShape(
            base.latency_ms if link.latency_ms is None else link.latency_ms,
            base.jitter_ms if link.jitter_ms is None else link.jitter_ms,
            base.loss_pct if link.loss_pct is None else link.loss_pct,
            link.rate_mbit or 0.0,
        )
        table[(a, b)] = table[(b, a)] = shape
    return table


def shaper_dir(state: Path) -> Path:
    return lab_dir(state) / "shaper"


def addresses(t: Topology | Deployment, prefix: str) -> dict[str, str]:
    out, per_dc = {}, {}
    for h in t.hosts():
        i = dc_index(t, h.dc)
        per_dc[h.dc] = per_dc.get(h.dc, 0) + 1
        out[h.name] = f"{prefix}.{i}.{9 + per_dc[h.dc]}"
    return out


def lab_dir(state: Path) -> Path:
    """The lab's own folder in the state folder (constants.state_dir): its hosts, keys and shaper."""
    return state / "lab"


def _connection(lab: Path) -> dict:
    # As on AWS, the unprivileged login user; the roles' plays `become` root.
    return {
        "ansible_user": sshd.LOGIN_USER,
        "ansible_ssh_private_key_file": str(lab / "ssh" / "id_ed25519"),
        # Each host's key is pinned when its sshd starts (infra/lab/sshd.py), so a changed one is refused.
        "ansible_ssh_common_args": (
            f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={sshd.known_hosts(lab)} -o LogLevel=ERROR"
        ),
        "ansible_python_interpreter": "/usr/bin/python3",
        # The control's own state (inventories, the stack's CA and passwords): what host access
        # runs on a lab host does not see it, as an EC2 host has no copy (infra/observe/hostaccess.py).
        "lab_control_state": str(lab.parent / "stacks"),
        # The client hosts' agent Python is made from the hosts' own python3 (Debian's 3.11), as
        # from Amazon Linux's python3.11 on AWS (roles/dcdrill_agent).
        "dcdrill_agent_base_python": "/usr/bin/python3",
    }


def _services(version: str, cache: Path) -> dict:
    libs = cache / KAFKA_VERSIONS[version] / "libs"
    archive = java_archive.trained(libs)
    return {
        # The lab has no systemd: the roles start JVMs under dcdrill's small lab supervisor.
        "service_manager": "lab",
        "lab_service_python": sys.executable,
        "kafka_libs_dir": str(libs),
        # The hosts read the control's jar folder in place, so the archive setup trained on it
        # matches (infra/java_archive.py); without one the JVMs load their classes themselves.
        "java_class_archive": str(archive) if archive else "",
        # Services run unprivileged, each host's as a uid of its own (service_uid, a host var;
        # infra/lab/service.py starts them as it).
        "kafka_broker_service_user_create": False,
        "zookeeper_service_user_create": False,
    }


def _host_vars(lab: Path, hosts, address: dict[str, str]) -> dict:
    out = {}
    for h in hosts:
        # ansible_host is an id only the connection understands, as an instance id is on AWS: ssh
        # learns the address from its HostName option, and a task that dials ansible_host fails
        # here as it would there (tasks dial the inventory's DNS names).
        out[h.name] = {
            "data_root": str(lab / "hosts" / h.short),
            "netns": netns.host_ns(h.short),
            "ansible_host": netns.host_ns(h.short),
            "ansible_ssh_extra_args": f"-o HostName={address[h.name]}",
        }
        if h.role == "client":  # its own Python for dcdrill's agents, on its own disk
            out[h.name]["dcdrill_agent_dir"] = str(lab / "hosts" / h.short / "agent")
        if h.role in SERVICE_USER_VAR:
            out[h.name][SERVICE_USER_VAR[h.role]] = str(service_uid(address[h.name]))
    return out


def build_inventory(
    t: Topology, settings, cache: Path, d: Deployment | None = None, state: Path | None = None
) -> inventory.Inventory:
    """One cluster's inventory. settings: infra.lab.backend.LabSettings; `cache`: the tools' folder,
    `state`: the state folder (state_dir() when None); `d`: the replicated stack the cluster is
    part of, whose DCs and hosts share the lab's address plan."""
    lab = lab_dir(state or state_dir())
    extra = {
        **_services(t.kafka_version, cache),
        "kafka_broker_heap_mb": settings.broker_heap_mb,
        "zookeeper_heap_mb": settings.zookeeper_heap_mb,
        "kafka_broker_controller_heap_mb": settings.controller_heap_mb,
    }
    if d is not None and d.replicated:
        extra["kafka_broker_custom_properties"] = dict(inventory.REPLICATED_BROKER_PROPERTIES)
    address = addresses(d or t, settings.subnet_prefix)
    return inventory.build(t, address, _connection(lab), extra, _host_vars(lab, t.hosts(), address))


def build_mirror_inventory(d: Deployment, settings, cache: Path, state: Path | None = None) -> inventory.Inventory:
    """The MirrorMaker 2 hosts' inventory, on the newest Kafka the stack's clusters run."""
    lab = lab_dir(state or state_dir())
    extra = {**_services(d.mirror_kafka_version, cache), "kafka_mirror_heap_mb": settings.mirror_heap_mb}
    address = addresses(d, settings.subnet_prefix)
    return inventory.build_mirrors(
        d, address, _connection(lab), extra, _host_vars(lab, [h for h, _ in d.mirror_hosts()], address)
    )


def build_inventories(d: Deployment, settings, cache: Path, state: Path | None = None) -> dict:
    """The stack output: `inventory` (the home cluster's), and on a replicated stack `inventories`
    (every cluster's, by name) and `mirrors` (the MM2 hosts')."""
    if not d.replicated:
        return {"inventory": build_inventory(d.home, settings, cache, state=state).data}
    return {
        "inventory": build_inventory(d.home, settings, cache, d, state).data,
        "inventories": {c.name: build_inventory(c, settings, cache, d, state).data for c in d.clusters},
        "mirrors": build_mirror_inventory(d, settings, cache, state).data,
    }
