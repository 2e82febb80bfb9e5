"""infra/observe/broker_logs.py: the follower truncation loop named from a broker's own log lines."""

from __future__ import annotations

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import broker_logs, hostaccess

TOPIC = "dcdrill-isolate-then-power-loss-1a2b"


def fetcher_line(partition: int, offset: int) -> str:  # Kafka 3.9 and 4.3's AbstractFetcherThread, as a broker wrote it
    return (
        f"[2026-11-28 02:59:10,123] INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Truncating "
        f"partition {TOPIC}-{partition} with TruncationState(offset={offset}, completed=true) due to leader "
        f"epoch and offset EpochEndOffset(errorCode=0, partition={partition}, leaderEpoch=0, "
        f"endOffset={offset + 9}) (kafka.server.ReplicaFetcherThread)"
    )


def log_line(partition: int, offset: int) -> str:  # UnifiedLog's own line for the same round
    return (
        f"[2026-11-28 02:59:10,124] INFO [UnifiedLog partition={TOPIC}-{partition}, dir=/data] Truncating to "
        f"offset {offset} (kafka.log.UnifiedLog)"
    )


def test_each_round_counts_once_and_another_partition_s_name_is_not_this_one():
    other_topic = fetcher_line(4, 1856).replace(f"partition {TOPIC}", f"partition x{TOPIC}")
    lines = (
        [fetcher_line(4, 1856), log_line(4, 1856)] * 30
        + [fetcher_line(41, 1856)] * 50
        + [other_topic] * 50
        + [fetcher_line(4, 900)]
    )
    counts = broker_logs.truncations(lines, f"{TOPIC}-4")
    assert counts == {1856: 30, 900: 1}
    assert broker_logs.loop_in(counts) == (1856, 30)


def test_the_log_s_own_lines_count_where_the_fetcher_s_are_missing():
    no_op = (
        f"[2026-11-28 05:47:28,986] INFO [UnifiedLog partition={TOPIC}-4, dir=/data] Truncating to 7 has no "
        "effect as the largest offset in the log is 6 (kafka.log.UnifiedLog)"
    )  # as a 4.3 broker wrote it
    assert broker_logs.truncations([log_line(4, 7)] * 3 + [no_op], f"{TOPIC}-4") == {7: 4}


def test_a_leader_change_truncates_once_or_twice_and_is_no_loop():
    counts = broker_logs.truncations([fetcher_line(4, 1856), fetcher_line(4, 1900)], f"{TOPIC}-4")
    assert broker_logs.loop_in(counts) is None and broker_logs.loop_in(broker_logs.truncations([], "x-1")) is None


def _inventory() -> Inventory:
    brokers = {
        f"b{i}": {"dc": "dc-a", "broker_id": i, "ansible_host": f"ns-b{i}", "data_root": f"/lab/b{i}"} for i in (1, 2)
    }
    return Inventory({"all": {"vars": {}, "children": {"kafka_broker": {"hosts": brokers}}}})


def _status(alive: bool = True) -> dict:
    return {
        "brokers": [{"id": 1, "alive": True}, {"id": 2, "alive": alive}],
        "partitions": [
            {"topic": TOPIC, "partition": 4, "leader": 2, "replicas": [2, 1], "isr": [2]},
            {"topic": TOPIC, "partition": 5, "leader": 1, "replicas": [1, 2], "isr": [1, 2]},
        ],
    }


def test_the_out_of_sync_follower_s_log_is_read_and_its_loop_named(monkeypatch):
    asked = []

    def run(inventory, host, remote, timeout_s=120):
        asked.append((host.name, remote[-1]))
        return "\n".join([fetcher_line(4, 1856)] * 2795)

    monkeypatch.setattr(hostaccess, "run", run)
    [found] = broker_logs.truncation_loops(_inventory(), _status())
    assert found == {"partition": f"{TOPIC}-4", "broker": 1, "host": "b1", "offset": 1856, "times": 2795, "leader": 2}
    assert [h for h, _ in asked] == ["b1"] and "/lab/b1/kafka/server.log" in asked[0][1]
    assert "truncated to offset 1856 2,795 times" in broker_logs.describe([found])


def test_a_dead_broker_explains_a_short_isr_and_no_log_is_read(monkeypatch):
    monkeypatch.setattr(hostaccess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read")))
    assert broker_logs.truncation_loops(_inventory(), _status(alive=False)) == []


def test_a_log_that_cannot_be_read_is_said_so(monkeypatch):
    def run(inventory, host, remote, timeout_s=120):
        raise hostaccess.HostUnreachable("b1: no answer in 30 s")

    monkeypatch.setattr(hostaccess, "run", run)
    [found] = broker_logs.truncation_loops(_inventory(), _status())
    assert found["unread"].startswith("b1") and "could not be read" in broker_logs.describe([found])


# What a partition that will not heal looks like, one cause at a time (infra/observe/broker_logs.py
# stuck_partitions), from a status and the brokers' log tails as a failed wait collects them.
START = "[2026-12-01 10:00:00,000] INFO Kafka version: 3.9.1 (org.apache.kafka.common.utils.AppInfoParser)"
RECOVERY = (
    f"[2026-12-01 10:00:03,210] INFO [LogLoader partition={TOPIC}-0, dir=/lab/hosts/b1/kafka/data] Recovering "
    f"unflushed segment 1204. 3/12 recovered for {TOPIC}-0. (kafka.log.LogLoader)"
)
FATAL = (
    "[2026-12-01 10:00:02,001] ERROR [KafkaServer id=1] Fatal error during KafkaServer startup. Prepare to "
    "shutdown (kafka.server.KafkaServer)"
)
STALE = (
    "[2026-12-01 10:00:04,500] ERROR Error while creating ephemeral at /brokers/ids/2, node already exists and "
    "owner '72057611217' does not match current session '72057611218' (kafka.zk.KafkaZkClient$CheckedEphemeral)"
)


def stuck_status(brokers: dict) -> dict:
    """dc-a's brokers 1 and 2 hold every ISR of a topic whose partitions have no leader; broker 3
    leads a partition broker 4 follows from outside its ISR."""
    return {
        "brokers": [
            {"id": i, "host": f"b{i}", "dc": "dc-a" if i < 3 else "dc-b", **state} for i, state in brokers.items()
        ],
        "partitions": [
            {"topic": TOPIC, "partition": n, "leader": -1, "replicas": [1, 2, 3, 4], "isr": [1, 2]} for n in range(3)
        ]
        + [{"topic": TOPIC, "partition": 3, "leader": 3, "replicas": [3, 4], "isr": [3]}],
    }


ALIVE = {"alive": True, "reachable": True, "registered": True}
DOWN = {"alive": False, "reachable": False, "registered": False}


def test_a_leaderless_isr_is_named_with_each_member_s_state_from_its_log():
    st = stuck_status({1: DOWN, 2: {"alive": False, "reachable": True, "registered": False}, 3: ALIVE, 4: ALIVE})
    logs = {1: "\n".join([FATAL, START, "INFO ...", RECOVERY]), 2: "\n".join([START, STALE])}
    [leaderless, behind] = broker_logs.stuck_partitions(st, logs, unclean=False)
    assert leaderless.startswith(
        f"3 partition(s) without a leader ({TOPIC}-0, {TOPIC}-1, {TOPIC}-2), whose ISR is [1, 2]"
    )
    assert "unclean election is off, so only they may lead" in leaderless
    # b1 recovers since its last start (the fatal error was the start before); b2 runs unregistered
    assert (
        "broker 1: down while it recovers its log; the last recovery line:" in leaderless
        and "3/12 recovered" in leaderless
    )
    assert (
        "broker 2: up but not registered with the cluster; its last error:" in leaderless
        and "does not match" in leaderless
    )
    assert behind.startswith(f"1 partition(s) with broker 4 out of their ISR ({TOPIC}-3): broker 4 is serving")


def test_a_broker_that_failed_at_start_or_says_nothing_or_was_not_read_is_told_apart():
    down = {"id": 1, **DOWN}
    assert broker_logs.broker_state(down, "\n".join([START, FATAL])).startswith("down; its last error since its start:")
    assert broker_logs.broker_state(down, START) == "down, and its log says nothing since its last start"
    assert broker_logs.broker_state(down, None) == "down (its log could not be read)"
    # an error after the recovery lines: the start failed after recovering
    assert "Fatal error" in broker_logs.broker_state(down, "\n".join([START, RECOVERY, FATAL]))


def test_unclean_election_on_says_no_other_replica_took_over():
    st = stuck_status({1: DOWN, 2: DOWN, 3: ALIVE, 4: ALIVE})
    assert "unclean election is on, and no other replica took over" in broker_logs.stuck_partitions(st, {}, True)[0]
