"""Three-valued outcomes, as in Jepsen: ok (acknowledged), fail (known not written), info
(indeterminate). When in doubt it is info: calling a written record `fail` would make the
verifier report a cluster bug that is really ours.
"""

from __future__ import annotations

from kafka import errors as E

# The broker refused the request before appending anything. Not in this list on purpose:
# NotLeaderForPartition. An acks=all request already appended and waiting for followers is
# answered NOT_LEADER_OR_FOLLOWER when leadership moves, yet the record can survive on the new
# leader: a kill-dc drill caught exactly that (a "failed" record present in the log).
REJECTED_BEFORE_APPEND = (
    E.NotEnoughReplicasError,
    E.MessageSizeTooLargeError,
    E.RecordListTooLargeError,
    E.InvalidTopicError,
    E.TopicAuthorizationFailedError,
    E.CorruptRecordError,
    E.InvalidRequiredAcksError,
)


def classify(exc: BaseException, retries: int) -> str:
    """Outcome of a failed send.

    `fail` needs certainty: the broker refused before appending *and* no earlier attempt of
    the same batch can have been written (retries == 0). A client-side error raised before the
    record left the client (metadata or buffer timeout) is `fail` too. Everything else, such as
    request timeouts, disconnects or NotEnoughReplicasAfterAppend (written, then ISR too small),
    is `info`.
    """
    if isinstance(exc, E.NotEnoughReplicasAfterAppendError):
        return "info"
    if isinstance(exc, REJECTED_BEFORE_APPEND):
        return "fail" if retries == 0 else "info"
    if isinstance(exc, (E.KafkaTimeoutError, BufferError)) and "metadata" in str(exc).lower():
        return "fail"
    return "info"


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def classify_librdkafka(err, retries: int) -> str:
    """The same rules for confluent-kafka's KafkaError codes, but NOT_ENOUGH_REPLICAS is `info`
    whatever `retries` says: librdkafka resends a batch answered NOT_LEADER_OR_FOLLOWER (or any
    error that calls for new metadata) without counting a retry, because it takes such a batch
    for unwritten (`rd_kafka_handle_Produce_error`, librdkafka 2.16). An acks=all batch that was
    appended and then saw its leader move gets exactly that answer, and its resend can meet the
    new leader's short ISR. The refusal then belongs to the second attempt, while the first one's
    copy survives: a drill caught both (docs/evidence.md)."""
    from confluent_kafka import KafkaError as K

    # Refusals that every attempt of the record meets alike (its size, the acks setting, the
    # user's rights), and librdkafka's own for a partition or topic it does not know (nothing
    # was sent).
    rejected = {
        K.MSG_SIZE_TOO_LARGE,
        K.RECORD_LIST_TOO_LARGE,
        K.INVALID_REQUIRED_ACKS,
        K.TOPIC_AUTHORIZATION_FAILED,
        K._UNKNOWN_PARTITION,
        K._UNKNOWN_TOPIC,
    }
    if err.code() in rejected:
        return "fail" if retries == 0 else "info"
    return "info"


# The Java client's exceptions (simple class names) for the same refusals as REJECTED_BEFORE_APPEND.
JAVA_REJECTED_BEFORE_APPEND = frozenset(
    {
        "NotEnoughReplicasException",
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTopicException",
        "TopicAuthorizationException",
        "CorruptRecordException",
        "InvalidRequiredAcksException",
    }
)


def classify_java(exception: str, message: str, retries: int) -> str:
    """The same rules for the Java client's answer (its exception's class name and message). Known
    unsent: the buffer stayed full past max.block.ms, or the topic's metadata never came, so the
    record never left the client. An expired batch (delivery.timeout.ms) may have been sent: info."""
    name = exception.rsplit(".", 1)[-1]
    if name == "BufferExhaustedException" or (name == "TimeoutException" and "not present in metadata" in message):
        return "fail"
    if name in JAVA_REJECTED_BEFORE_APPEND:
        return "fail" if retries == 0 else "info"
    return "info"
