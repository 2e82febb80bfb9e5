"""infra/observe/status.py: what counts as a healthy cluster, judged on the status an agent returns."""

import copy

import pytest

from dcdrill.infra.observe import status

HEALTHY = {
    "brokers": [
        {"id": 1, "dc": "dc-a", "host": "b1.dc-a.lab", "alive": True},
        {"id": 2, "dc": "dc-b", "host": "b2.dc-b.lab", "alive": True},
    ],
    "controller": 1,
    "quorum": {
        "kind": "zookeeper",
        "alive": 3,
        "total": 3,
        "quorum": True,
        "nodes": [
            {"host": "zk1.dc-a.lab", "mode": "leader"},
            {"host": "zk2.dc-b.lab", "mode": "follower"},
            {"host": "zk3.dc-c.lab", "mode": "follower"},
        ],
    },
    "partitions": [
        {
            "topic": "dcdrill-t",
            "partition": 0,
            "leader": 1,
            "replicas": [1, 2],
            "isr": [1, 2],
            "leader_dc": "dc-a",
            "replica_dcs": ["dc-a", "dc-b"],
            "isr_dcs": ["dc-a", "dc-b"],
        }
    ],
    "offline_partitions": 0,
    "under_replicated_partitions": 0,
    "off_preferred_leader": 0,
    "error": None,
    "bootstrap": "b1.dc-a.lab:9092,b2.dc-b.lab:9092",
}


def changed(**top) -> dict:
    st = copy.deepcopy(HEALTHY)
    st.update(top)
    return st


def test_every_broker_up_a_full_quorum_and_no_lagging_partition_is_healthy():
    assert status.healthy(HEALTHY)


def dead_broker():
    st = copy.deepcopy(HEALTHY)
    st["brokers"][1]["alive"] = False
    return st


def lost_voter():
    st = copy.deepcopy(HEALTHY)
    st["quorum"].update(alive=2)
    return st


def no_quorum():
    st = copy.deepcopy(HEALTHY)
    st["quorum"].update(alive=1, quorum=False)
    return st


@pytest.mark.parametrize(
    "unhealthy",
    [
        dead_broker(),
        lost_voter(),
        no_quorum(),
        changed(offline_partitions=1),
        changed(under_replicated_partitions=2),
        changed(error="no broker reachable"),
    ],
    ids=["a broker down", "a voter down", "no quorum", "offline", "under-replicated", "an error"],
)
def test_anything_short_of_that_is_not(unhealthy):
    assert not status.healthy(unhealthy)


def test_the_control_asks_a_client_host_outside_the_target_dc(monkeypatch):
    asked = []
    monkeypatch.setattr(status.hostaccess, "call", lambda inv, call, args, avoid: asked.append((call, args, avoid)))
    status.cluster_status("inventory", timeout_s=3.0, avoid_dcs=("dc-a",))
    assert asked == [("cluster_status", {"timeout_s": 3.0}, ("dc-a",))]
