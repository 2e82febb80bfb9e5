"""infra/observe/host_probes.py: the probes a client host runs. What needs a cluster (the status,
the coordination sample) runs on the real lab (tests/infra/test_lab_integration.py); what only
needs a TCP port runs here, on loopback."""

import socket

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import host_probes


def mirrors(port_open: bool) -> tuple[Inventory, socket.socket | None]:
    listener = None
    if port_open:
        listener = socket.socket()
        listener.bind(("127.0.0.1", host_probes.MIRROR_REST_PORT))
        listener.listen()
    hosts = {
        "127.0.0.1": {"dc": "dc-b", "mirror_id": 1, "ansible_host": "127.0.0.1", "kafka_mirror_name": "east->west"}
    }
    return Inventory({"all": {"vars": {}, "children": {"kafka_mirror": {"hosts": hosts}}}}), listener


def test_a_mirror_node_is_alive_while_its_rest_port_answers():
    inv, listener = mirrors(port_open=True)
    try:
        assert host_probes.mirror_status_here(inv, timeout_s=1.0) == [
            {"name": "127.0.0.1", "dc": "dc-b", "mirror": "east->west", "alive": True}
        ]
    finally:
        listener.close()
    assert host_probes.mirror_status_here(inv, timeout_s=1.0)[0]["alive"] is False
