"""What losing a DC does to transactions (infra/transaction_rules.py), both sides of each boundary."""

from dataclasses import replace

from dcdrill.infra import rules, stack, transaction_rules
from tests.conftest import make

TWO_AND_A_HALF = [("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)]


def loss(p: dict) -> dict:
    return {f: v["commit_loss_possible"] for f, v in p["faults"].items()}


def test_the_state_log_takes_the_stacks_factor_and_min_isr():
    log = transaction_rules.state_log(make(TWO_AND_A_HALF, factor=4, min_insync=3))
    assert (log.factor, log.min_insync) == (4, 3)


def test_consistency_first_stops_transactions_and_loses_no_commit():
    tx = transaction_rules.transactions(stack.load("local"))
    a = tx["per_dc"]["dc-a"]
    assert a["writable"] is False and a["writable_why"].startswith("the drill's topic: 2 replicas outside dc-a < ")
    assert not any(loss(a).values())
    c = tx["per_dc"]["dc-c"]  # the tiebreaker: ZooKeeper keeps 2 of 3
    assert c["writable"] is True and not any(loss(c).values())
    assert tx["transaction_version"] == 0 and "KIP-890 part 1" in tx["version_why"]


def test_transactions_write_with_acks_all_whatever_the_stacks_acks():
    """acks=1 loses acknowledged records after a kill; a transactional producer is idempotent,
    so with unclean election off and minInsync above a DC's replicas its commits are safe."""
    t = make(TWO_AND_A_HALF, factor=4, min_insync=3, acks="1", accept_risks=("acks-below-all",))
    assert rules.acked_loss(t, "dc-a")[0] is True
    assert not any(loss(transaction_rules.per_dc(t, "dc-a")).values())


def test_unclean_election_can_lose_a_told_committed_transaction_and_a_power_loss_too():
    unclean = make(TWO_AND_A_HALF, factor=4, min_insync=2, unclean=True, profile="availability-first")
    p = transaction_rules.per_dc(unclean, "dc-a")
    assert p["writable"] is True and all(loss(p).values())
    assert "unclean election then elects an out-of-sync survivor" in p["faults"]["kill-dc"]["why"]
    clean = replace(unclean, replication=replace(unclean.replication, unclean_leader_election=False))
    p = transaction_rules.per_dc(clean, "dc-a")
    assert loss(p) == {"kill-dc": False, "stop-dc": False, "power-loss": True, "isolate-dc": False}


def test_a_drill_topics_lower_min_insync_does_not_lower_the_state_logs():
    """A drill's --min-insync 2 on `local` (minInsync 3): its topic keeps 2 outside dc-a, enough,
    but __transaction_state keeps the brokers' min.isr 3: no commit is answered."""
    t = stack.load("local")
    drill_topic = replace(t.replication, min_insync=2)
    p = transaction_rules.per_dc(t, "dc-a", drill_topic)
    assert p["writable"] is False and p["writable_why"].startswith("__transaction_state: 2 replicas outside dc-a"), p
    assert rules.writable_after_loss(replace(t, replication=drill_topic), "dc-a")


def test_kraft_4_runs_transaction_version_2_and_says_which_clients_speak_it():
    version, why = transaction_rules.transaction_version(stack.load("local-kraft"))
    assert version == 2 and "Java client" in why and "librdkafka stays on version 0" in why
    old = replace(stack.load("local"), kafka_version="3.5.2")
    version, why = transaction_rules.transaction_version(old)
    assert version == 0 and "no broker check" in why
