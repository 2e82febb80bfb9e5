"""The ports the roles listen on, read from the roles' own defaults: the roles are the one source,
and the Python side (security groups, status probes, inventory) reads them here."""

from __future__ import annotations

from functools import cache

import yaml

from dcdrill.infra.constants import SHIPPED


@cache
def role_defaults(role: str) -> dict:
    """roles/<role>/defaults/main.yml as written (templated values stay unrendered strings)."""
    return yaml.safe_load((SHIPPED / "roles" / role / "defaults" / "main.yml").read_text())


def _listener(name: str) -> int:
    broker = role_defaults("kafka_broker")
    listeners = [*broker["kafka_broker_listeners"], broker["kafka_broker_controller_listener"]]
    return int(next(entry["port"] for entry in listeners if entry["name"] == name))


_zookeeper = role_defaults("zookeeper")
CLIENT_PORT, REPLICATION_PORT, CONTROLLER_PORT = _listener("CLIENT"), _listener("REPLICATION"), _listener("CONTROLLER")
ZOOKEEPER_CLIENT_PORT = int(_zookeeper["zookeeper_client_port"])
ZOOKEEPER_PORTS = (
    ZOOKEEPER_CLIENT_PORT,
    int(_zookeeper["zookeeper_quorum_port"]),
    int(_zookeeper["zookeeper_election_port"]),
)
MIRROR_REST_PORT = int(role_defaults("kafka_mirror")["kafka_mirror_rest_port"])  # MirrorMaker 2's internal REST
