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
