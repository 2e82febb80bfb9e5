"""A failed send's outcome (validation/outcomes.py): `fail` only when Kafka surely did not
write it, `info` (indeterminate) whenever an attempt may have been appended."""

import pytest
from kafka import errors as E

from dcdrill.validation import outcomes


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


@pytest.mark.parametrize(
    ("exception", "message", "retries", "status"),
    [
        (
            "org.apache.kafka.common.errors.TimeoutException",
            "Topic t not present in metadata after 5000 ms.",
            5,
            "fail",
        ),
        ("org.apache.kafka.clients.producer.BufferExhaustedException", "Failed to allocate memory", 5, "fail"),
        ("org.apache.kafka.common.errors.NotEnoughReplicasException", "x", 0, "fail"),
        ("org.apache.kafka.common.errors.NotEnoughReplicasException", "x", 2147483647, "info"),
        ("org.apache.kafka.common.errors.TimeoutException", "Expiring 3 record(s) for t-0: 120000 ms", 0, "info"),
        ("org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException", "x", 0, "info"),
        ("org.apache.kafka.common.errors.NotLeaderOrFollowerException", "x", 0, "info"),
    ],
)
def test_java_outcomes_are_fail_only_when_certainly_unwritten(exception, message, retries, status):
    assert outcomes.classify_java(exception, message, retries) == status
