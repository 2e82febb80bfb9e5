"""infra/observe/status_text.py: the status as `dcdrill status` prints it."""

import copy

from dcdrill.infra.observe import status_text
from tests.infra.observe.test_status import HEALTHY


def test_a_zookeeper_cluster_reads_broker_by_broker_then_the_quorum_then_the_partitions():
    assert status_text.render(HEALTHY).splitlines() == [
        "brokers:",
        "    1 dc-a     b1.dc-a.lab              alive",
        "    2 dc-b     b2.dc-b.lab              alive",
        "zookeeper: 3/3 serving, quorum yes",
        "  zk1.dc-a.lab             leader",
        "  zk2.dc-b.lab             follower",
        "  zk3.dc-c.lab             follower",
        "partitions: 1, offline 0, under-replicated 0, off their preferred leader 0",
        "  dcdrill-t-0: leader 1 (dc-a) replicas [1, 2] isr [1, 2] dcs ['dc-a', 'dc-b']",
    ]


def test_a_kraft_quorum_names_its_leader_and_each_voters_lag_and_a_down_one_says_down():
    st = copy.deepcopy(HEALTHY)
    st["brokers"][1]["alive"] = False
    st["quorum"] = {
        "kind": "kraft",
        "alive": 1,
        "total": 2,
        "quorum": False,
        "leader": 3001,
        "leader_epoch": 7,
        "nodes": [
            {"id": 3001, "dc": "dc-a", "host": "k1.dc-a.lab", "mode": "leader", "lag": 0},
            {"id": 3002, "dc": "dc-b", "host": "k2.dc-b.lab", "mode": None, "lag": None},
        ],
    }
    st["partitions"].append({**st["partitions"][0], "topic": "__consumer_offsets"})
    st["error"] = "timed out"
    lines = status_text.render(st).splitlines()
    assert "    2 dc-b     b2.dc-b.lab              DOWN" in lines
    assert "controller quorum (KRaft): 1/2 voters serving, quorum NO, leader 3001 (epoch 7)" in lines
    assert "   3001 dc-a     k1.dc-a.lab              leader lag 0" in lines
    assert "   3002 dc-b     k2.dc-b.lab              DOWN" in lines
    assert not [line for line in lines if "__consumer_offsets" in line]  # internal topics are left out
    assert lines[-1] == "error: timed out"
