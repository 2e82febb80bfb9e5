"""The coordination's moves during a DC loss, read from a coordination log (spark/coordination.py),
and the log's bad lines (record.parse_coordination)."""

import json

import pytest

from dcdrill.record.contents import parse_coordination
from dcdrill.spark.coordination import fault_coordination, timeline

TOPOLOGY = {
    "hosts": [
        {"name": "ctl1.dc-a.lab", "role": "kafka_controller", "dc": "dc-a", "node_id": 1001},
        {"name": "ctl2.dc-b.lab", "role": "kafka_controller", "dc": "dc-b", "node_id": 1002},
        {"name": "ctl3.dc-c.lab", "role": "kafka_controller", "dc": "dc-c", "node_id": 1003},
        {"name": "b1.dc-a.lab", "role": "kafka_broker", "dc": "dc-a", "node_id": 1},
        {"name": "b2.dc-a.lab", "role": "kafka_broker", "dc": "dc-a", "node_id": 2},
        {"name": "b3.dc-b.lab", "role": "kafka_broker", "dc": "dc-b", "node_id": 3},
        {"name": "b4.dc-b.lab", "role": "kafka_broker", "dc": "dc-b", "node_id": 4},
    ]
}
ALL = [1, 2, 3, 4]


def sample(at, leader, brokers=ALL, controller=None):
    return {
        "at_ms": at,
        "leader": leader,
        "epoch": 1,
        "serving": 3,
        "total": 3,
        "brokers": brokers,
        "controller": controller,
    }


def kill_a(start=10_000, end=40_000):
    return {"fault": "kill-dc", "target": "dc-a", "start_ms": start, "end_ms": end}


def test_leader_in_the_lost_dc_moves_and_its_brokers_are_fenced():
    log = [
        sample(9_000, "ctl1.dc-a.lab"),
        sample(10_500, None, ALL),
        sample(11_500, None, ALL),
        sample(12_500, "ctl2.dc-b.lab", ALL),
        sample(19_500, "ctl2.dc-b.lab", [2, 3, 4]),
        sample(20_500, "ctl2.dc-b.lab", [3, 4]),
        sample(41_000, "ctl2.dc-b.lab", ALL),
    ]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert (c["leader_before"], c["leader_after"], c["leader_after_dc"]) == ("ctl1.dc-a.lab", "ctl2.dc-b.lab", "dc-b")
    assert c["leader_had_to_move"] and c["leader_change_ms"] == 2_500
    assert c["quorum_lost_ms"] == 2_000  # 10.5 s to 12.5 s
    assert c["fenced_ms"] == {"1": 9_500, "2": 10_500} and c["fencing_ms"] == 10_500
    assert c["samples"] == 5  # the one after the heal is not the fault's


def test_the_isr_shrink_and_its_return_after_the_heal_are_timed():
    from dcdrill.spark.report import coordination_text

    def isr(at, in_sync):
        return {**sample(at, "ctl2.dc-b.lab"), "isr": {"partitions": 6, "in_sync": in_sync}}

    log = [
        isr(9_000, 6),
        isr(11_000, 6),
        isr(24_000, 3),
        isr(25_000, 0),
        isr(41_000, 4),
        isr(42_500, 6),
        isr(43_500, 6),
    ]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert c["isr_shrunk_ms"] == 14_000 and c["isr_full_after_heal_ms"] == 2_500
    text = coordination_text({"target": "dc-a", "coordination": c})
    assert "first ISR shrank after 14.0 s" in text and "every ISR full again 2.5 s after the heal" in text
    # Samples without `isr` (records from before the watch counted it): nothing said.
    old = fault_coordination([sample(9_000, "ctl2.dc-b.lab"), sample(11_000, "ctl2.dc-b.lab")], kill_a(), TOPOLOGY)
    assert old["isr_shrunk_ms"] is None and old["isr_full_after_heal_ms"] is None
    assert "ISR" not in coordination_text({"target": "dc-a", "coordination": old})


def test_an_unanswered_kraft_sample_is_not_a_lost_quorum():
    unanswered = {**sample(11_000, None, None), "answered": False, "error": "NodeNotReadyError: 1"}
    log = [sample(9_000, "ctl2.dc-b.lab"), unanswered, sample(12_000, "ctl2.dc-b.lab", [3, 4])]
    kraft = {**TOPOLOGY, "coordination": "kraft"}
    c = fault_coordination(log, kill_a(), kraft)
    assert c["quorum_lost_ms"] == 0 and c["leader_change_ms"] is None and c["samples"] == 1
    assert fault_coordination(log, kill_a(), TOPOLOGY)["quorum_lost_ms"] == 1_000  # ZooKeeper's srvr answered


def test_describe_quorum_unanswered_through_answering_brokers_is_counted_apart():
    """KRaft: the brokers answer, DescribeQuorum through them times out (a broker forwarding to a
    cut-off controller). It stays in quorum_lost_ms, and quorum_unanswered_ms says how much of it
    was only that; the report's line says so too."""
    from dcdrill.spark.report import coordination_text

    timed_out = {**sample(11_000, None, [3, 4]), "answered": True, "error": "RequestTimedOutError: 7"}
    log = [
        sample(9_000, "ctl2.dc-b.lab"),
        timed_out,
        {**timed_out, "at_ms": 20_000},
        sample(37_000, "ctl3.dc-c.lab", [3, 4]),
    ]
    kraft = {**TOPOLOGY, "coordination": "kraft"}
    c = fault_coordination(log, kill_a(), kraft)
    assert c["quorum_lost_ms"] == 26_000 and c["quorum_unanswered_ms"] == 26_000
    assert "26.0 s of it only DescribeQuorum unanswered" in coordination_text({"target": "dc-a", "coordination": c})
    assert fault_coordination(log, kill_a(), TOPOLOGY)["quorum_unanswered_ms"] == 0  # ZooKeeper: the nodes answer


def test_a_leader_without_a_majority_is_no_quorum():
    alone = {**sample(11_000, "ctl3.dc-c.lab", [1, 2, 3, 4]), "quorum": False, "serving": 1}
    log = [sample(9_000, "ctl3.dc-c.lab"), alone, {**alone, "at_ms": 30_000}]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert c["quorum_lost_ms"] == 29_000 and c["leader_change_ms"] is None
    assert c["fenced_ms"] == {"1": None, "2": None}  # nobody to fence them
    assert timeline(log, TOPOLOGY)[1]["leader_dc"] == "none"


def test_a_leader_outside_the_lost_dc_is_kept():
    log = [
        sample(9_000, "ctl2.dc-b.lab"),
        sample(11_000, "ctl2.dc-b.lab", [3, 4]),
        sample(12_000, "ctl2.dc-b.lab", [3, 4]),
    ]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert not c["leader_had_to_move"] and c["leader_change_ms"] is None and c["quorum_lost_ms"] == 0
    assert c["fencing_ms"] == 1_000


def test_a_quorum_that_never_recovers_is_a_stall_and_unfenced_brokers_have_no_time():
    log = [
        sample(9_000, "ctl1.dc-a.lab"),
        sample(11_000, None, None),
        sample(25_000, None, None),
        sample(39_000, None, None),
    ]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert c["leader_change_ms"] is None and c["leader_had_to_move"]
    assert c["quorum_lost_ms"] == 29_000  # from the first sample without a leader to the heal
    assert c["fenced_ms"] == {"1": None, "2": None} and c["fencing_ms"] is None


def test_zookeeper_mode_times_the_kafka_controller_too():
    log = [
        sample(9_000, "zk2.dc-b.lab", controller=1),
        sample(11_000, "zk2.dc-b.lab", controller=-1),
        sample(28_000, "zk2.dc-b.lab", [3, 4], controller=3),
    ]
    c = fault_coordination(log, kill_a(), TOPOLOGY)
    assert c["controller_change_ms"] == 18_000 and c["fencing_ms"] == 18_000


def test_no_samples_before_the_fault_or_no_dc_loss_gives_nothing():
    assert fault_coordination([sample(11_000, "x")], kill_a(), TOPOLOGY) is None
    slow = {"fault": "degrade-link", "target": "dc-a", "start_ms": 10_000, "end_ms": 20_000}
    assert fault_coordination([sample(9_000, "x"), sample(11_000, "x")], slow, TOPOLOGY) is None


def test_log_lines_parse_and_a_torn_last_line_is_skipped():
    rows = [{**sample(2, "a"), "isr": {"partitions": 6, "in_sync": 4}}, {**sample(1, None, None), "isr": None}]
    data = ("\n".join(json.dumps(r) for r in rows) + "\n" + '{"at_ms": 3, "lea').encode()
    assert [r["at_ms"] for r in parse_coordination(data, "c.jsonl")] == [1, 2]


@pytest.mark.parametrize(
    "line, named",
    [
        ("[1, 2]", "c.jsonl:1: a coordination sample must be a JSON object"),
        ('{"at_ms": -1, "leader": null}', "c.jsonl:1: at_ms"),
        ('{"at_ms": 1, "leader": 7}', "c.jsonl:1: leader"),
        ('{"at_ms": 1, "leader": null, "brokers": ["b1"]}', "c.jsonl:1: brokers"),
        ('{"at_ms": 1, "leader": null, "epoch": "x"}', "c.jsonl:1: epoch"),
        ('{"at_ms": 1, "leader": null, "answered": "no"}', "c.jsonl:1: answered"),
        ('{"at_ms": 1, "leader": "a", "quorum": 1}', "c.jsonl:1: quorum"),
        ('{"at_ms": 1, "leader": "a", "isr": {"partitions": 6, "in_sync": 7}}', "c.jsonl:1: isr"),
        ('{"at_ms": 1, "leader": "a", "isr": 6}', "c.jsonl:1: isr"),
    ],
)
def test_a_bad_log_line_is_named(line, named):
    with pytest.raises(ValueError, match=named):
        parse_coordination((line + "\n").encode(), "c.jsonl")


def test_the_timeline_names_the_leaders_dc_and_counts_live_brokers_and_full_isrs():
    unanswered = {**sample(3, None, None), "answered": False}
    log = [
        {**sample(1, "ctl1.dc-a.lab"), "isr": {"partitions": 6, "in_sync": 6}},
        {**sample(2, None, [3, 4]), "isr": {"partitions": 6, "in_sync": 0}},
        unanswered,
    ]
    assert timeline(log, {**TOPOLOGY, "coordination": "kraft"}) == [
        {"at_ms": 1, "leader_dc": "dc-a", "live_brokers": 4, "in_sync": 6},
        {"at_ms": 2, "leader_dc": "none", "live_brokers": 2, "in_sync": 0},
    ]
    assert timeline([sample(1, "ctl1.dc-a.lab")], {**TOPOLOGY, "coordination": "kraft"})[0]["in_sync"] is None
