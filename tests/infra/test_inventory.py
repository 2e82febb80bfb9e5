"""The inventory (infra/inventory.py) as the lab builds it: its schema, the stack CA for clients
on TLS stacks only, and the SASL users, super users and declared ACLs."""

from pathlib import Path

import pytest

from dcdrill.infra import inventory, stack
from dcdrill.infra.lab import layout


def test_lab_inventory_schema():
    t = stack.load("local")
    inv = layout.build_inventory(t, stack.backend("local").settings, Path("/tmp/cache"))
    kids = inv.data["all"]["children"]
    assert sorted(kids) == ["client", "kafka_broker", "kafka_controller", "zookeeper"]
    assert kids["kafka_controller"]["hosts"] == {} and inv.voters == inv.zookeepers
    b1 = kids["kafka_broker"]["hosts"]["b1.dc-a.lab"]
    assert (b1["dc"], b1["rack"], b1["broker_id"]) == ("dc-a", "dc-a", 1)
    assert (b1["ansible_host"], b1["ansible_ssh_extra_args"]) == ("dcd-b1", "-o HostName=10.77.1.11")
    assert kids["zookeeper"]["hosts"]["zk3.dc-c.lab"]["zookeeper_id"] == 3
    assert inv.vars["kafka_min_insync_replicas"] == 3
    assert [(h.name, h.dc, h.node_id) for h in inv.in_dc("dc-c")] == [("zk3.dc-c.lab", "dc-c", 3)]
    assert inv.bootstrap_servers() == ["b1.dc-a.lab:9092", "b2.dc-a.lab:9092", "b3.dc-b.lab:9092", "b4.dc-b.lab:9092"]
    addrs = [
        hv["ansible_ssh_extra_args"].removeprefix("-o HostName=") for g in kids.values() for hv in g["hosts"].values()
    ]
    assert len(addrs) == len(set(addrs)) and all(a.startswith("10.77.") for a in addrs)


def test_clients_get_the_stack_ca_only_on_tls_stacks():
    inv = inventory.Inventory({"all": {"vars": {"kafka_tls": True, "kafka_tls_dir": "/x/tls"}}})
    assert inv.client_security() == {
        "security_protocol": "SSL",
        "ssl_cafile": "/x/tls/ca.pem",
        "ssl_check_hostname": True,
    }
    assert inventory.Inventory({"all": {"vars": {"kafka_tls": False}}}).client_security() == {}
    with pytest.raises(ValueError, match="kafka_tls_dir"):
        inventory.Inventory({"all": {"vars": {"kafka_tls": True}}}).client_security()


def test_sasl_inventory_names_users_super_users_and_declared_acls():
    av = layout.build_inventory(stack.load("local"), stack.backend("local").settings, Path("/tmp/c")).vars
    assert (av["kafka_sasl"], av["kafka_sasl_admin"], av["kafka_sasl_client"], av["kafka_sasl_users"]) == (
        True,
        "admin",
        "workload",
        ["admin", "workload"],
    )
    assert av["kafka_super_users"][:2] == ["User:admin", "User:CN=b1.dc-a.lab,O=dcdrill"]
    assert {(a["principal"], a["resource"], a["name"], a["pattern"]) for a in av["kafka_access_acls"]} == {
        ("User:workload", "topic", "dcdrill", "prefixed"),
        ("User:workload", "group", "dcdrill", "prefixed"),
        ("User:workload", "transactional_id", "dcdrill", "prefixed"),
    }
