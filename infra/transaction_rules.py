"""What losing one DC does to transactions, predicted from the same model as rules.py.

A transactional producer is idempotent, so it writes with acks=all whatever the stack's `acks`.
Its commit is answered once the coordinator's PrepareCommit is in the transaction state log
(`__transaction_state`, at transaction.state.log.min.isr); the coordinator then writes a COMMIT
(or ABORT) marker to each of the transaction's partitions, also with acks=all (WriteTxnMarkers).
So a transaction can go on through a DC loss iff the quorum survives and both the drill's topic
and the state log keep min.insync replicas outside the DC; a told-committed transaction can lose
records or its markers in exactly the ways an acks=all record can (rules.acked_loss), on either.
"""

from __future__ import annotations

import dataclasses

from dcdrill.infra import rules
from dcdrill.infra.constants import kafka_release
from dcdrill.infra.topology import Replication, Topology


def state_log(t: Topology) -> Replication:
    """`__transaction_state`'s replication as roles/kafka_broker sets it: the stack's factor and
    min.insync, each at most the cluster's broker count; unclean election as the brokers'."""
    factor = min(t.replication.factor, t.total_brokers)
    return dataclasses.replace(t.replication, factor=factor, min_insync=min(t.replication.min_insync, factor))


def transaction_version(t: Topology) -> tuple[int, str]:
    """The transaction protocol the cluster runs (KIP-890), and what it means for the clients."""
    if t.kraft and kafka_release(t.kafka_version) >= (4, 0):
        return 2, (
            f"Kafka {t.kafka_version} on KRaft runs transaction.version=2 (KIP-890 part 2): each transaction "
            "bumps the producer epoch, fencing a late write of the one before; only Kafka's 4.x Java client "
            "speaks it (librdkafka stays on version 0)"
        )
    on = "KRaft" if t.kraft else "ZooKeeper"
    if kafka_release(t.kafka_version) < (3, 6):
        return 0, (
            f"Kafka {t.kafka_version} on {on}: transaction version 0, and no broker check of a transaction's "
            "partitions (KIP-890 part 1 came in 3.6): a late write can leave a transaction hanging"
        )
    return 0, (
        f"Kafka {t.kafka_version} on {on}: transaction version 0, the brokers checking a transaction's "
        "partitions before its writes (KIP-890 part 1)"
    )


def _as_transactional(t: Topology, replication: Replication) -> Topology:
    return dataclasses.replace(t, acks="all", replication=replication)


def per_dc(t: Topology, dc: str, topic: Replication | None = None) -> dict:
    """Whether transactions go on while `dc` is gone, and per way of losing it whether a
    transaction its producer was told committed can lose records or markers; each with why.
    `topic`: the drill topic's own settings (a drill's --min-insync), else the stack's; the
    state log keeps the stack's, which the brokers were configured with."""
    topic, log = _as_transactional(t, topic or t.replication), _as_transactional(t, state_log(t))
    if not rules.quorum_survives(t, dc):
        writable, why_writable = False, rules.writes_why(t, dc)
    elif not rules.writable_after_loss(topic, dc):
        writable, why_writable = False, "the drill's topic: " + rules.writes_why(topic, dc)
    elif not rules.writable_after_loss(log, dc):
        writable, why_writable = False, "__transaction_state: " + rules.writes_why(log, dc) + ": no commit is answered"
    else:
        writable, why_writable = (
            True,
            (
                f"the drill's topic and __transaction_state (factor {log.replication.factor}, min.isr "
                f"{log.replication.min_insync}) keep enough replicas outside {dc}: coordinators and leaders fail over"
            ),
        )
    faults = {}
    for fault in rules.FAULT_KINDS:
        on_topic, on_log = rules.acked_loss(topic, dc, fault), rules.acked_loss(log, dc, fault)
        if on_topic[1] == on_log[1]:
            why = on_topic[1]
        else:
            why = f"the drill's topic (records, markers): {on_topic[1]}; __transaction_state: {on_log[1]}"
        faults[fault] = {"commit_loss_possible": on_topic[0] or on_log[0], "why": why}
    return {"writable": writable, "writable_why": why_writable, "faults": faults}


def transactions(t: Topology, topic: Replication | None = None) -> dict:
    """The cluster's transaction version and, per DC, what losing it does to transactions."""
    version, version_why = transaction_version(t)
    log = state_log(t)
    return {
        "transaction_version": version,
        "version_why": version_why,
        "state_log": {"factor": log.factor, "min_insync": log.min_insync},
        "per_dc": {dc.name: per_dc(t, dc.name, topic) for dc in t.datacenters},
    }
