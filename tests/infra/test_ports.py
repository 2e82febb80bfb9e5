"""The ports (infra/ports.py) are the roles' own defaults, read from their files: one source."""

import yaml

from dcdrill.infra import ports
from tests import ROOT


def defaults(role: str) -> dict:
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def test_the_ports_are_what_the_roles_defaults_declare():
    broker = defaults("kafka_broker")
    listeners = {e["name"]: int(e["port"]) for e in [*broker["kafka_broker_listeners"]]}
    listeners["CONTROLLER"] = int(broker["kafka_broker_controller_listener"]["port"])
    assert (ports.CLIENT_PORT, ports.REPLICATION_PORT, ports.CONTROLLER_PORT) == (
        listeners["CLIENT"],
        listeners["REPLICATION"],
        listeners["CONTROLLER"],
    )
    zk = defaults("zookeeper")
    assert ports.ZOOKEEPER_PORTS == tuple(
        int(zk[k]) for k in ("zookeeper_client_port", "zookeeper_quorum_port", "zookeeper_election_port")
    )
    assert ports.MIRROR_REST_PORT == int(defaults("kafka_mirror")["kafka_mirror_rest_port"])


def test_no_two_services_share_a_port():
    every = [ports.CLIENT_PORT, ports.REPLICATION_PORT, ports.CONTROLLER_PORT, *ports.ZOOKEEPER_PORTS]
    every.append(ports.MIRROR_REST_PORT)
    assert len(set(every)) == len(every), every
