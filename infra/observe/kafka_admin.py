"""What the control asks of the cluster itself, run by an agent on one of its client hosts
(infra/observe/agent.py, through host access): creating and deleting a drill's topic, electing preferred
leaders, reading a group's committed offsets, a canary write, a topic's log end offsets. The
control never opens a broker's port; these run inside the cluster's DCs, as on AWS.

Each takes the cluster's inventory and the call's named arguments and returns JSON. A request the
cluster refuses as the caller's mistake raises ValueError, which the caller gets back as such.
"""

from __future__ import annotations

from dcdrill.infra.constants import CANARY_TOPIC, KAFKA_PYTHON_ACKS
from dcdrill.infra.inventory import Inventory

PREFERRED = 0  # ElectLeaders election type (1 is unclean)


def _admin(inventory: Inventory, request_timeout_ms: int, client_id: str):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=inventory.bootstrap_servers(),
        request_timeout_ms=request_timeout_ms,
        bootstrap_timeout_ms=min(request_timeout_ms, 30_000),
        client_id=client_id,
        **inventory.client_security(admin=True),
    )


def create_topic(inventory: Inventory, args: dict) -> dict:
    """args: topic, partitions, factor, configs, create (may create it), fresh (must not exist
    yet), timeout_ms. Returns {"created": bool}."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    topic = args["topic"]
    admin = _admin(inventory, int(args.get("timeout_ms", 10_000)), "dcdrill-topics")
    try:
        if topic not in admin.list_topics():
            if not args.get("create", True):
                raise ValueError(f"topic {topic!r} does not exist (pass --create-topic to create it)")
            try:
                admin.create_topics(
                    [
                        NewTopic(
                            topic,
                            int(args["partitions"]),
                            int(args["factor"]),
                            topic_configs=dict(args.get("configs") or {}),
                        )
                    ]
                )
                return {"created": True}
            except TopicAlreadyExistsError:  # the broker answering list_topics had not heard of it yet:
                pass  # the controller's word is the one that counts
        if args.get("fresh"):
            raise ValueError(
                f"topic {topic!r} exists already: an earlier drill wrote into the same drill "
                "record folder; give the drill a new one"
            )
        return {"created": False}
    finally:
        admin.close()


def delete_topic(inventory: Inventory, args: dict) -> dict:
    """args: topic, timeout_ms. Returns {"deleted": true}, or {"unknown": true} for a topic the
    cluster does not have."""
    timeout_ms = int(args.get("timeout_ms", 30_000))
    admin = _admin(inventory, timeout_ms, "dcdrill-topics")
    try:
        admin.delete_topics([args["topic"]], timeout_ms=timeout_ms)
        return {"deleted": True}
    except Exception as exc:  # kafka-python raises its error classes by code, UnknownTopicOrPartition among them
        if "UnknownTopic" in type(exc).__name__:
            return {"unknown": True}
        raise
    finally:
        admin.close()


def elect_preferred_leaders(inventory: Inventory, args: dict) -> dict:
    """args: election_ms (the broker's own wait), request_ms (the client's, longer). Returns
    {"unanswered": bool}: sent, but no answer in time (whether it took effect is for the caller
    to read from the cluster's status)."""
    from kafka.errors import KafkaTimeoutError, RequestTimedOutError

    admin = _admin(inventory, int(args["request_ms"]), "dcdrill-chaos")
    try:
        # Per-partition errors (a preferred replica not in sync) show in the caller's wait.
        admin.elect_leaders(PREFERRED, timeout_ms=int(args["election_ms"]), raise_errors=False)
        return {"unanswered": False}
    except (RequestTimedOutError, KafkaTimeoutError):
        return {"unanswered": True}
    finally:
        admin.close()


def group_offsets(inventory: Inventory, args: dict) -> dict:
    """args: group, topic. Returns {partition: committed offset} (keys as strings: JSON); {} when
    the group has none there or the cluster does not answer."""
    from kafka.errors import KafkaError

    try:
        admin = _admin(inventory, 10_000, "dcdrill-failover")
        try:
            got = admin.list_group_offsets({args["group"]: None}).get(args["group"]) or {}
        finally:
            admin.close()
    except (KafkaError, OSError):
        return {}
    return {
        str(tp.partition): meta.offset for tp, meta in got.items() if tp.topic == args["topic"] and meta.offset >= 0
    }


def canary(inventory: Inventory, args: dict) -> dict:
    """args: acks, within_s. One record to the canary topic with the drill's acks. Returns
    {"acknowledged": bool}."""
    from kafka import KafkaProducer

    within_s = float(args["within_s"])
    try:
        producer = KafkaProducer(
            bootstrap_servers=inventory.bootstrap_servers(),
            acks=KAFKA_PYTHON_ACKS[args["acks"]],
            bootstrap_timeout_ms=int(within_s * 1000),
            max_block_ms=int(within_s * 1000),
            **inventory.client_security(),
        )
        try:
            producer.send(CANARY_TOPIC, b"canary").get(timeout=within_s)
            return {"acknowledged": True}
        finally:
            producer.close(timeout=2)
    except Exception:  # noqa: BLE001 - any failure means no progress
        return {"acknowledged": False}


def end_offsets(inventory: Inventory, args: dict) -> dict:
    """args: topic, timeout_s. Returns {"ends": {partition: log end offset}}, or {"ends": null}
    when the topic does not exist (yet), a partition has no leader, or nobody answers."""
    from kafka import KafkaConsumer, TopicPartition

    try:
        consumer = KafkaConsumer(
            bootstrap_servers=inventory.bootstrap_servers(),
            client_id="dcdrill-mirror-probe",
            request_timeout_ms=int(float(args.get("timeout_s", 10)) * 1000),
            **inventory.client_security(admin=True),
        )
    except Exception:  # noqa: BLE001 - no broker answers
        return {"ends": None}
    try:
        parts = consumer.partitions_for_topic(args["topic"])
        if not parts:
            return {"ends": None}
        ends = consumer.end_offsets([TopicPartition(args["topic"], p) for p in sorted(parts)])
        return {"ends": {str(tp.partition): off for tp, off in ends.items()}}
    except Exception:  # noqa: BLE001 - a partition without a leader
        return {"ends": None}
    finally:
        consumer.close()


CALLS = {
    f.__name__: f for f in (create_topic, delete_topic, elect_preferred_leaders, group_offsets, canary, end_offsets)
}
