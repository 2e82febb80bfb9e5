"""Outcome classification and the record value format (no cluster needed)."""

import json

import pytest
from kafka import errors as E

from dcdrill.validation import clients, outcomes


@pytest.mark.parametrize(
    "exc,retries,expected",
    [
        (E.NotEnoughReplicasError(), 0, "fail"),
        (E.NotEnoughReplicasError(), 3, "info"),  # an earlier attempt may have been written
        (E.NotEnoughReplicasAfterAppendError(), 0, "info"),
        (E.NotLeaderForPartitionError(), 0, "info"),  # may be appended already (seen in a kill-dc drill)
        (E.RequestTimedOutError(), 0, "info"),
        (E.KafkaConnectionError(), 0, "info"),
        (E.KafkaTimeoutError("Failed to update metadata after 5.0 secs."), 0, "fail"),
        (E.KafkaTimeoutError("Batch expired"), 0, "info"),
    ],
)
def test_outcome_classification(exc, retries, expected):
    assert outcomes.classify(exc, retries) == expected


def _rd(name: str):
    from confluent_kafka import KafkaError

    return KafkaError(getattr(KafkaError, name))


@pytest.mark.parametrize(
    "code,retries,expected",
    [
        ("NOT_ENOUGH_REPLICAS", 0, "info"),  # an uncounted resend after NOT_LEADER may follow a written attempt
        ("NOT_ENOUGH_REPLICAS", 3, "info"),
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 0, "info"),
        ("MSG_SIZE_TOO_LARGE", 0, "fail"),
        ("RECORD_LIST_TOO_LARGE", 0, "fail"),
        ("TOPIC_AUTHORIZATION_FAILED", 0, "fail"),
        ("_UNKNOWN_PARTITION", 0, "fail"),
        ("NOT_LEADER_FOR_PARTITION", 0, "info"),
        ("_MSG_TIMED_OUT", 0, "info"),  # the delivery timeout: it may have been written
        ("REQUEST_TIMED_OUT", 0, "info"),
        ("_TRANSPORT", 0, "info"),
    ],
)
def test_librdkafka_outcome_classification(code, retries, expected):
    assert outcomes.classify_librdkafka(_rd(code), retries) == expected


def test_record_value_carries_identity_and_size():
    v = clients.encode_value("p7", 42, 123456, 100)
    assert len(v) >= 100 - 8 and clients.decode_value(v) == ("p7", 42, 123456)
    assert clients.decode_value(b"not json") == (None, None, None)
    assert json.loads(v)["s"] == 42


def test_identity_headers_round_trip_and_foreign_headers_are_ignored():
    headers = clients.identity_headers("dc-a-p1", 42, "east")
    assert clients.identity_from_headers(headers) == ("dc-a-p1", 42, "east")
    # MM2 copies the headers as they are; another application's headers beside ours change nothing
    assert clients.identity_from_headers([("trace", b"x")] + headers) == ("dc-a-p1", 42, "east")
    assert clients.identity_from_headers(None) == (None, None, None)
    assert clients.identity_from_headers([("dcdrill-seq", b"not a number")]) == (None, None, None)


def test_partition_is_a_pure_function_of_the_key():
    assert clients.partition_for("k1", 6) == clients.partition_for("k1", 6)
    assert {clients.partition_for(f"k{i}", 6) for i in range(100)} == set(range(6))


def _producer(acked_to: dict, final: bool = True) -> dict:
    return {"producer_id": "p", "ok": 1, "acked_to": acked_to, "final": final}


def test_the_drain_ends_once_every_partition_is_read_to_its_last_acknowledged_offset():
    from dcdrill.validation.workload import caught_up

    a, b = clients.position_key(None, "t", 0), clients.position_key(None, "t", 1)
    producers = [_producer({a: 40, b: 7}), _producer({a: 41})]
    assert caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 41}}, {"consumer_id": "c2", "read_to": {b: 9}}])
    assert not caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 40, b: 9}}])  # p2's 41 not read yet
    assert not caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 41}}])  # partition 1 not read at all
    # A producer without its final snapshot (killed) may have acknowledged more than it said.
    assert not caught_up(
        [_producer({a: 40}), _producer({a: 41}, final=False), {"consumer_id": "c", "read_to": {a: 99}}]
    )
    # Another cluster's copy is another partition: a failed-over group's reads do not count.
    assert not caught_up(
        [_producer({a: 40}), {"consumer_id": "c", "read_to": {clients.position_key("west", "t", 0): 99}}]
    )
    assert not caught_up([{"consumer_id": "c", "read_to": {a: 1}}])  # no producer: nothing says what to wait for


def _producer_cfg(**spec):
    from tests.process_configs import process_config

    return process_config(producer_id="p1", **spec)


def test_librdkafka_keeps_its_own_batch_size_unless_one_is_given():
    """librdkafka sends one partition's batch per request: Java's 16384 there gave the workload a
    third of its records/s (docs/benchmarks.md, workload_vs_perftest.py). librdkafka takes both."""
    from confluent_kafka import Producer

    from dcdrill.validation.backends import librdkafka_settings

    default, given = librdkafka_settings(_producer_cfg()), librdkafka_settings(_producer_cfg(batch_size=65536))
    assert "batch.size" not in default and given["batch.size"] == 65536
    assert default["linger.ms"] == 5 and default["acks"] == "all" and default["max.in.flight"] == 5
    for settings in (default, given):
        Producer(settings).flush(0)  # an unknown or ill-typed key is refused here
