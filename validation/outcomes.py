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
    E.NotEnoughReplicasError, E.MessageSizeTooLargeError, E.RecordListTooLargeError,
    E.InvalidTopicError, E.TopicAuthorizationFailedError, E.CorruptRecordError,
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
    """The same rules for confluent-kafka's KafkaError codes."""
    from confluent_kafka import KafkaError as K

    # The broker's refusals of REJECTED_BEFORE_APPEND, and librdkafka's own for a partition or
    # topic it does not know (nothing was sent).
    rejected = {K.NOT_ENOUGH_REPLICAS, K.MSG_SIZE_TOO_LARGE, K.RECORD_LIST_TOO_LARGE, K.INVALID_REQUIRED_ACKS,
                K.TOPIC_AUTHORIZATION_FAILED, K._UNKNOWN_PARTITION, K._UNKNOWN_TOPIC}
    if err.code() == K.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
        return "info"
    if err.code() in rejected:
        return "fail" if retries == 0 else "info"
    return "info"
