"""The cluster model (infra/topology.py): hosts numbered across DCs, replicas per DC as rack-aware
assignment places them, a drill's own settings applied or refused by name, and what an ACL allows."""

import pytest

from dcdrill.infra import stack
from dcdrill.infra.topology import Acl, ConfigError


def test_hosts_are_numbered_across_dcs_with_a_client_in_each_broker_dc():
    t = stack.load("local")
    assert [(h.name, h.role, h.node_id) for h in t.hosts()] == [
        ("zk1.dc-a.lab", "zookeeper", 1),
        ("b1.dc-a.lab", "kafka_broker", 1),
        ("b2.dc-a.lab", "kafka_broker", 2),
        ("c1.dc-a.lab", "client", 1),
        ("zk2.dc-b.lab", "zookeeper", 2),
        ("b3.dc-b.lab", "kafka_broker", 3),
        ("b4.dc-b.lab", "kafka_broker", 4),
        ("c2.dc-b.lab", "client", 2),
        ("zk3.dc-c.lab", "zookeeper", 3),
    ]
    assert t.hosts()[1].short == "b1"


def test_replicas_spread_over_the_broker_dcs_and_never_exceed_a_dcs_brokers():
    t = stack.load("local")  # factor 4 over two DCs of two brokers, and a tiebreaker DC
    assert [t.replicas_in(dc) for dc in t.dc_names] == [2, 2, 0] and t.max_replicas_per_dc == 2
    three = t.with_settings({"factor": 3})
    assert [three.replicas_in(dc) for dc in t.dc_names] == [2, 2, 0]  # ceil(3 / 2), within 2 brokers
    assert t.total_voters == 3 and t.voters_in("dc-c") == 1 and t.voter_noun


def test_a_drills_settings_apply_to_a_copy_and_bad_ones_are_named():
    t = stack.load("local")
    own = t.with_settings({"acks": "1", "min_insync": 2, "unclean_leader_election": True})
    assert (own.acks, own.replication.min_insync, own.replication.unclean_leader_election) == ("1", 2, True)
    assert (t.acks, t.replication.min_insync) == ("all", 3)
    with pytest.raises(ConfigError, match=r"unknown drill settings \['retention'\]"):
        t.with_settings({"retention": 1})
    with pytest.raises(ConfigError, match="drill setting acks is '2'; valid: 0, 1, all"):
        t.with_settings({"acks": "2"})


def test_an_acl_allows_its_principal_its_operations_on_its_resources_only():
    acl = Acl("workload", "topic", "dcdrill-", "prefixed", ("read", "write"))
    assert acl.allows("workload", "topic", "dcdrill-x", "write")
    assert not acl.allows("workload", "topic", "payments", "write")
    assert not acl.allows("intruder", "topic", "dcdrill-x", "read")
    assert not acl.allows("workload", "group", "dcdrill-x", "read")
    assert not acl.allows("workload", "topic", "dcdrill-x", "delete")
    literal = Acl("workload", "group", "dcdrill-verifier", "literal", ("all",))
    assert literal.allows("workload", "group", "dcdrill-verifier", "delete")
    assert not literal.allows("workload", "group", "dcdrill-verifier-2", "read")
