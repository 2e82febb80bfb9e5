"""The multi-DC rules and predictions, both sides of each boundary."""

from dataclasses import replace

import pytest

from dcdrill.infra import rules, stack
from dcdrill.infra.topology import ConfigError
from tests.conftest import make

TWO_AND_A_HALF = [("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)]
THREE = [("dc-a", 1, 1), ("dc-b", 1, 1), ("dc-c", 1, 1)]


def head(p: dict) -> dict:
    """A DC's prediction without its reasons, visibility and per-fault loss."""
    return {k: p[k] for k in ("quorum_survives", "writable", "acked_loss_possible")}


def names(t):
    """The rules `t` breaks, its exposures left out (test_exposures checks them)."""
    return [v.rule for v in rules.check(t) if v.rule not in rules.EXPOSURE_RULES]


def test_shipped_local_stack_is_clean_and_predicted_right():
    t = stack.load("local")
    assert rules.check(t) == []
    assert [h.name for h in t.hosts_with_role("kafka_broker")] == [
        "b1.dc-a.lab",
        "b2.dc-a.lab",
        "b3.dc-b.lab",
        "b4.dc-b.lab",
    ]
    assert t.replicas_in("dc-a") == 2 and t.replicas_in("dc-c") == 0
    p = rules.predictions(t)
    # 2.5 DC, consistency-first: losing a broker DC keeps quorum, stops acks=all writes, loses nothing.
    assert head(p["dc-a"]) == {"quorum_survives": True, "writable": False, "acked_loss_possible": False}
    assert head(p["dc-c"]) == {"quorum_survives": True, "writable": True, "acked_loss_possible": False}


def test_shipped_3dc_stack_survives_any_dc_with_writes():
    t = stack.load("local-3dc")
    assert names(t) == [] and rules.blocking(t) == []  # its PLAINTEXT accepted in the stack file
    assert all(
        head(p) == {"quorum_survives": True, "writable": True, "acked_loss_possible": False}
        for p in rules.predictions(t).values()
    )


def test_quorum_boundary():
    # 3 nodes: losing 1 keeps 2 >= 2. 2 in one DC + 1: losing the 2 leaves 1 < 2.
    assert "quorum-dc-loss" not in names(make(TWO_AND_A_HALF))
    bad = make([("dc-a", 2, 2), ("dc-b", 2, 1)])
    assert "quorum-dc-loss" in names(bad)
    assert "losing dc-a leaves 1 of 3" in rules.check(bad)[0].message + " ".join(v.message for v in rules.check(bad))


def test_factor_and_min_insync_boundaries():
    assert "factor-exceeds-brokers" not in names(make(TWO_AND_A_HALF, factor=4))
    assert "factor-exceeds-brokers" in names(make(TWO_AND_A_HALF, factor=5, min_insync=3))
    assert "min-insync-exceeds-factor" not in names(make(TWO_AND_A_HALF, factor=4, min_insync=4))
    assert "min-insync-exceeds-factor" in names(make(TWO_AND_A_HALF, factor=3, min_insync=4))


def test_consistency_first_boundary():
    # r_d = 2 in the 2.5-DC layout: minInsync 3 > 2 passes, 2 fails.
    assert "consistency-min-insync" not in names(make(TWO_AND_A_HALF, min_insync=3))
    assert "consistency-min-insync" in names(make(TWO_AND_A_HALF, min_insync=2))
    # acks=1 and 0: the leader acknowledges alone, whatever minInsync says.
    assert "consistency-acks" not in names(make(TWO_AND_A_HALF, min_insync=3))
    assert "consistency-acks" in names(make(TWO_AND_A_HALF, min_insync=3, acks="1"))
    assert "consistency-acks" in names(make(TWO_AND_A_HALF, min_insync=3, acks="0"))


def test_matrix_of_settings_on_one_layout():
    """Every acks x minInsync x unclean setting for the 2.5-DC layout at factor 4, as `dcdrill plan
    --matrix` prints it: the predictions and profile fits come from the same functions as plan's."""
    t = make(TWO_AND_A_HALF, factor=4, min_insync=3)
    rows = rules.matrix(t)
    assert len(rows) == 2 * 4 * 2
    by = {(r["acks"], r["min_insync"], r["unclean_leader_election"]): r for r in rows}
    assert [k for k, r in by.items() if r["current"]] == [("all", 3, False)]
    # consistency-first: acks=all and minInsync above the 2 replicas a DC holds, and nothing else.
    assert sorted(k for k, r in by.items() if "consistency-first" in r["profiles"]) == [
        ("all", 3, False),
        ("all", 3, True),
        ("all", 4, False),
        ("all", 4, True),
    ]
    # availability-first: unclean election on and 2 replicas to spare.
    assert sorted(k for k, r in by.items() if "availability-first" in r["profiles"]) == [
        ("1", 1, True),
        ("1", 2, True),
        ("all", 1, True),
        ("all", 2, True),
    ]
    assert head(by[("all", 3, False)]["predictions"]["dc-a"]) == {
        "quorum_survives": True,
        "writable": False,
        "acked_loss_possible": False,
    }
    assert by[("1", 2, True)]["predictions"]["dc-a"]["acked_loss_possible"] is True


def test_availability_first_boundaries():
    ok = make(THREE, factor=3, min_insync=2, unclean=True, profile="availability-first")
    assert names(ok) == []
    # factor - minInsync = 0 < r_d = 1
    assert "availability-headroom" in names(
        make(THREE, factor=3, min_insync=3, unclean=True, profile="availability-first")
    )
    assert "availability-unclean" in names(
        make(THREE, factor=3, min_insync=2, unclean=False, profile="availability-first")
    )


def test_three_dcs_give_both_promises():
    for n in (1, 2):
        dcs = [(d, n, 1) for d in ("dc-a", "dc-b", "dc-c")]
        t = make(dcs, factor=3 * n, min_insync=n + 1)
        assert "consistency-min-insync" not in names(t)
        assert all(p["writable"] for p in rules.predictions(t).values())


def test_acked_loss_predictions():
    # acks=all, unclean on, minInsync <= r_d: an ISR confined to one DC can be lost.
    t = make(TWO_AND_A_HALF, min_insync=2, unclean=True)
    assert rules.predictions(t)["dc-a"]["acked_loss_possible"] is True
    t = make(TWO_AND_A_HALF, min_insync=2, unclean=False)
    assert rules.predictions(t)["dc-a"]["acked_loss_possible"] is False
    # acks=1: any DC that can hold a leader; the tiebreaker cannot.
    t = make(TWO_AND_A_HALF, acks="1")
    assert rules.predictions(t)["dc-a"]["acked_loss_possible"] is True
    assert rules.predictions(t)["dc-c"]["acked_loss_possible"] is False


def _loss(t, dc: str) -> dict:
    return {f: p["acked_loss_possible"] for f, p in rules.predictions(t)[dc]["faults"].items()}


def test_a_power_loss_loses_what_an_isr_inside_the_dc_had_not_flushed_even_with_unclean_election_off():
    # Two DCs, factor 4, minInsync 2: the ISR can shrink to one DC's replicas and keep acknowledging.
    t = make(TWO_AND_A_HALF, min_insync=2, unclean=False)
    assert _loss(t, "dc-a") == {"kill-dc": False, "stop-dc": False, "power-loss": True, "isolate-dc": False}
    faults = rules.predictions(t)["dc-a"]["faults"]
    assert "the cluster waits for them, and after a kill (the hosts keep their page caches)" in faults["kill-dc"]["why"]
    assert "a power loss takes what dc-a's replicas had not flushed" in faults["power-loss"]["why"]
    assert "ELR" not in faults["power-loss"]["why"]  # ZooKeeper: no eligible leader replicas
    # minInsync above a DC's replicas: every acked record is outside it too, whatever takes the DC.
    t = make(TWO_AND_A_HALF, min_insync=3, unclean=False)
    assert _loss(t, "dc-a") == dict.fromkeys(rules.FAULT_KINDS, False)
    assert "on at least 1 outside dc-a's 2" in rules.predictions(t)["dc-a"]["faults"]["power-loss"]["why"]
    # Unclean election on: any way of losing the DC.
    assert _loss(make(TWO_AND_A_HALF, min_insync=2, unclean=True), "dc-a") == dict.fromkeys(rules.FAULT_KINDS, True)
    assert _loss(make(TWO_AND_A_HALF, min_insync=2), "dc-c") == dict.fromkeys(rules.FAULT_KINDS, False)


def test_flushing_each_write_leaves_a_power_loss_nothing_acknowledged_to_take():
    t = make(TWO_AND_A_HALF, min_insync=2, unclean=False).with_settings({"flush_each_write": True})
    assert _loss(t, "dc-a")["power-loss"] is False
    assert "flush.messages=1" in rules.predictions(t)["dc-a"]["faults"]["power-loss"]["why"]
    # Unclean election still elects an out-of-sync survivor, flushed or not.
    assert _loss(t.with_settings({"unclean_leader_election": True}), "dc-a")["power-loss"] is True


def test_a_kraft_power_loss_names_what_eligible_leader_replicas_change():
    t = _kraft([("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)])
    t = replace(t, replication=replace(t.replication, min_insync=2))
    why = rules.predictions(t)["dc-a"]["faults"]["power-loss"]["why"]
    assert rules.elr(t) and "leave the ELR, KAFKA-15586" in why


def test_acks_1_writes_below_min_insync_stay_unread_on_3_9_zookeeper_and_on_4_3_kraft():
    """KAFKA-15583 (3.7+): the leader advances the high watermark only while the ISR holds
    min(min.insync, factor) replicas, on ZooKeeper as on KRaft, with or without ELR. So acks=1
    writes go on but no consumer reads them while the survivors are fewer: the 3.9.1 broker's
    Partition.maybeIncrementLeaderHW returns at once when isUnderMinIsr."""
    kraft = _kraft([("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)])
    kraft = replace(kraft, acks="1", replication=replace(kraft.replication, min_insync=3))
    p = rules.predictions(kraft)["dc-a"]
    assert p["writable"] and not p["visible"] and "KAFKA-15583" in p["visible_why"]
    assert "2 survive outside dc-a" in p["visible_why"]
    assert rules.predictions(replace(kraft, replication=replace(kraft.replication, min_insync=2)))["dc-a"]["visible"]
    assert rules.predictions(replace(kraft, acks="all"))["dc-a"]["visible_why"].startswith("no write is acknowledged")
    zk = make(TWO_AND_A_HALF, min_insync=3, acks="1")
    assert zk.kafka_version.startswith("3.9") and not rules.elr(zk)
    p = rules.predictions(zk)["dc-a"]
    assert p["writable"] and not p["visible"] and "KAFKA-15583" in p["visible_why"]
    assert rules.predictions(make(TWO_AND_A_HALF, min_insync=2, acks="1"))["dc-a"]["visible"]


def test_the_effective_min_insync_is_capped_at_the_factor():
    """Kafka compares the ISR with min(min.insync.replicas, factor): a topic whose min.insync
    exceeds its factor still has a high watermark once every replica is in sync."""
    t = make(TWO_AND_A_HALF, min_insync=3, acks="1")
    t = replace(t, replication=replace(t.replication, factor=2, min_insync=3))
    visible, why = rules.visible_after_loss(t, "dc-c")
    assert visible and "min.insync.replicas=2" in why


def test_the_writes_reason_names_kraft_s_unclean_election_cycle():
    kraft = _kraft([("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)])
    kraft = replace(kraft, replication=replace(kraft.replication, min_insync=2, unclean_leader_election=True))
    assert "unclean.leader.election.interval.ms" in rules.predictions(kraft)["dc-a"]["writes_why"]
    zk = make(TWO_AND_A_HALF, min_insync=2, unclean=True)
    assert "interval" not in rules.predictions(zk)["dc-a"]["writes_why"]
    assert rules.predictions(make(TWO_AND_A_HALF, min_insync=3))["dc-a"]["writes_why"] == (
        "2 replicas outside dc-a < min.insync.replicas=3: acks=all writes are refused"
    )


def test_plain_rules():
    assert "empty-dc" in names(make([("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1), ("dc-d", 0, 0)]))
    # Shape (a repeated DC, an unknown profile) is the schema's: refused before any rule runs.
    with pytest.raises(ConfigError, match=r"datacenters: DC names must be unique; repeated: dc-a"):
        make([("dc-a", 2, 1), ("dc-a", 2, 1), ("dc-c", 0, 1)])
    with pytest.raises(ConfigError, match=r"dcdrill:profile: Input should be .* \(got 'fast'\)"):
        make(TWO_AND_A_HALF, profile="fast")


def test_accept_risks_waives_only_the_named_rule():
    t = make(TWO_AND_A_HALF, min_insync=2, **{"dcdrill:acceptRisks": ["consistency-min-insync"]})
    assert names(t) == ["consistency-min-insync"]
    assert [v.rule for v in rules.blocking(t)] == ["unauthenticated-listener"]  # not waived
    # A safety rule cannot be waived: the schema refuses the name, and blocking() ignores it anyway.
    with pytest.raises(ConfigError, match=r"dcdrill:acceptRisks\[0\]: .*\(got 'sasl-needs-tls'\)"):
        make(TWO_AND_A_HALF, **{"dcdrill:acceptRisks": ["sasl-needs-tls"]})
    unsafe = replace(secured(tls=False), accept_risks=("sasl-needs-tls",))
    assert [v.rule for v in rules.blocking(unsafe)] == ["sasl-needs-tls"]


GRANT = [
    {
        "principal": "workload",
        "resource": "topic",
        "name": "dcdrill",
        "pattern": "prefixed",
        "operations": ["read", "write", "describe"],
    },
    {"principal": "workload", "resource": "group", "name": "dcdrill", "pattern": "prefixed", "operations": "read"},
]


def secured(tls=True, sasl=True, acls=None):
    from dcdrill.infra.topology import from_config

    cluster = {
        "datacenters": [dict(zip(("name", "brokers", "zookeepers"), d)) for d in TWO_AND_A_HALF],
        "replication": {"factor": 4, "minInsync": 3},
        "tls": tls,
        "sasl": sasl,
        "acls": GRANT if acls is None else acls,
    }
    return from_config({"dcdrill:cluster": cluster})


def test_security_rules():
    assert names(secured()) == []
    assert secured().users == ["admin", "workload"]
    assert names(secured(tls=False)) == ["sasl-needs-tls"]
    assert names(secured(sasl=False)) == ["acls-need-sasl"]
    # Without the group grant the workload's consumers could not join: drills could not run.
    t = secured(
        acls=[
            {
                "principal": "workload",
                "resource": "topic",
                "name": "dcdrill",
                "pattern": "prefixed",
                "operations": ["all"],
            }
        ]
    )
    [v] = rules.check(t)
    assert v.rule == "workload-acls" and "read on group dcdrill-verifier" in v.message and "topic" not in v.message
    with pytest.raises(ConfigError) as bad:
        secured(acls=[{"principal": "x", "resource": "queue", "pattern": "glob", "operations": ["fly"]}])
    for key in ("acls[0].resource", "acls[0].pattern", "acls[0].operations[0]"):
        assert f"dcdrill:cluster.{key}: Input should be" in str(bad.value)
    assert secured(acls=[{"principal": "x", "resource": "topic", "name": "a", "operations": ["read"]}]).users == [
        "admin",
        "workload",
        "x",
    ]  # every ACL principal is a user to create


def test_exposures_are_reported_waivable_and_leave_the_matrix_alone():
    plain = make(TWO_AND_A_HALF)
    [v] = [v for v in rules.check(plain) if v.rule in rules.EXPOSURE_RULES]
    assert v.rule == "unauthenticated-listener" and v.message.startswith("CLIENT and REPLICATION authenticate no one")
    assert "no sasl, no tls" in v.message and rules.blocking(plain) == [v]
    tls_only = replace(secured(), sasl=None, acls=())
    assert [v.message.split(" authenticate")[0] for v in rules.check(tls_only)] == ["CLIENT"]  # REPLICATION: mTLS
    assert rules.check(secured()) == []
    wide = secured(acls=[*GRANT, {"principal": "workload", "resource": "cluster", "operations": ["all"]}])
    [v] = rules.check(wide)
    assert v.rule == "workload-cluster-all" and "grant workload (the workload's user) all on the cluster" in v.message
    admin_wide = secured(acls=[*GRANT, {"principal": "ops", "resource": "cluster", "operations": ["all"]}])
    assert rules.check(admin_wide) == []  # another user's grant is the team's own business
    assert rules.blocking(replace(wide, accept_risks=("workload-cluster-all",))) == []
    # the matrix judges profiles by the settings it varies, which change no exposure
    assert {r["current"]: r["profiles"] for r in rules.matrix(plain)}[True] == ["consistency-first"]


def test_a_literal_acl_matches_one_name_a_prefixed_one_every_name_it_starts():
    from dcdrill.infra.topology import Acl

    lit, pre = Acl("u", "topic", "dcdrill", "literal", ("read",)), Acl("u", "topic", "dcdrill", "prefixed", ("all",))
    assert lit.allows("u", "topic", "dcdrill", "read") and not lit.allows("u", "topic", "dcdrill-x", "read")
    assert pre.allows("u", "topic", "dcdrill-x", "write") and not pre.allows("v", "topic", "dcdrill-x", "write")
    assert not lit.allows("u", "topic", "dcdrill", "write") and not pre.allows("u", "group", "dcdrill", "read")


def test_produce_latency_is_the_round_trip_to_the_leader_plus_to_its_farthest_replica_for_acks_all():
    t = make(THREE, factor=3, min_insync=2)
    one_way = {(a, b): 5.0 for a in t.dc_names for b in t.dc_names if a != b}
    one_way[("dc-a", "dc-c")] = one_way[("dc-c", "dc-a")] = 40.0
    p = rules.produce_latency(t, one_way)
    # The whole ISR acknowledges acks=all, so the farthest replica sets the price, not min.insync's nearest.
    assert p["acks_all_adds_ms"] == {"dc-a": 80.0, "dc-b": 10.0, "dc-c": 80.0}
    route = {(r["producer_dc"], r["leader_dc"]): r for r in p["routes"]}
    assert route[("dc-b", "dc-b")] == {
        "producer_dc": "dc-b",
        "leader_dc": "dc-b",
        "acks_1_ms": 0.0,
        "acks_all_ms": 10.0,
        "acks_all_max_ms": 20.0,
    }
    assert route[("dc-b", "dc-a")]["acks_all_ms"] == 10.0 + 80.0  # a record that just missed a fetch: + 80
    assert p["range_ms"] == {"1": [0.0, 80.0], "all": [10.0, 240.0]}


def test_produce_latency_on_the_shipped_lab_stack_follows_its_configured_links():
    t, backend = stack.load("local"), stack.backend("local")
    p = rules.produce_latency(t, backend.one_way_ms(t))  # latencyMs 5 between every pair
    assert p["acks_all_adds_ms"] == {"dc-a": 10.0, "dc-b": 10.0}  # dc-c holds no replica
    assert p["range_ms"] == {"1": [0.0, 10.0], "all": [10.0, 30.0]}
    assert stack.backend("aws-3az").one_way_ms(stack.load("aws-3az")) is None  # AWS: not predicted


def _kraft(dcs, **kw):
    """A KRaft stack; dcs are (name, brokers, controllers)."""
    from dcdrill.infra.topology import from_config

    accept = kw.pop("accept", [])
    cfg = {
        "dcdrill:cluster": {
            "coordination": "kraft",
            "datacenters": [{"name": n, "brokers": b, "controllers": c} for n, b, c in dcs],
            "replication": {"factor": 4, "minInsync": 3},
        },
        "dcdrill:acceptRisks": accept,
    }
    return from_config(cfg)


def test_shipped_kraft_stack_is_clean_and_predicted_like_local():
    t = stack.load("local-kraft")
    assert rules.check(t) == [] and t.kraft and t.kafka_version == "4.3.1"
    assert [h.name for h in t.hosts_with_role("kafka_controller")] == [
        "ctl1.dc-a.lab",
        "ctl2.dc-b.lab",
        "ctl3.dc-c.lab",
    ]
    assert [h.node_id for h in t.hosts_with_role("kafka_controller")] == [1001, 1002, 1003]  # apart from brokers' ids
    assert rules.tiebreakers(t) == ["dc-c"]
    assert rules.predictions(t) == rules.predictions(stack.load("local"))  # same layout, same promises
    assert rules.resolved(t)["eligible_leader_replicas"] is True  # 4.1+ formats new clusters with ELR
    assert rules.resolved(stack.load("local"))["eligible_leader_replicas"] is False


@pytest.mark.parametrize(
    "voters, rules_hit, dc_a_quorum",
    [
        ((1, 1, 1), [], True),  # 2.5 DC: any one DC may go
        ((2, 2, 1), [], True),  # 5 voters: losing 2 leaves 3 of 5
        ((2, 1, 0), ["empty-dc", "quorum-dc-loss"], False),  # dc-a holds 2 of 3: losing it stalls metadata
        ((3, 1, 1), ["quorum-dc-loss"], False),  # 3 of 5 in dc-a
        (
            (1, 1, 0),
            ["empty-dc", "quorum-even-voters", "quorum-dc-loss", "quorum-dc-loss"],
            False,
        ),  # 2 voters: either loss stalls
        ((2, 1, 1), ["quorum-even-voters", "quorum-dc-loss"], False),  # 4 voters: losing dc-a's 2 leaves 2 < 3
        ((0, 0, 0), ["empty-dc", "no-controller"], False),
    ],
)
def test_kraft_quorum_layouts(voters, rules_hit, dc_a_quorum):
    t = _kraft([("dc-a", 2, voters[0]), ("dc-b", 2, voters[1]), ("dc-c", 0, voters[2])])
    got = names(t)
    assert [r for r in got if r.startswith(("quorum", "no-", "empty"))] == rules_hit
    if sum(voters):
        assert rules.quorum_survives(t, "dc-a") is dc_a_quorum
        assert rules.predictions(t)["dc-a"]["quorum_survives"] is dc_a_quorum


def test_a_misplaced_kraft_quorum_blocks_unless_its_risk_is_accepted():
    t = _kraft([("dc-a", 2, 2), ("dc-b", 2, 1)])
    [v] = [v for v in rules.blocking(t) if v.rule not in rules.EXPOSURE_RULES]
    assert v.rule == "quorum-dc-loss" and "losing dc-a leaves 1 of 3 controllers" in v.message
    accepted = _kraft([("dc-a", 2, 2), ("dc-b", 2, 1)], accept=["quorum-dc-loss", "unauthenticated-listener"])
    assert rules.blocking(accepted) == [] and head(rules.predictions(accepted)["dc-a"]) == {
        "quorum_survives": False,
        "writable": False,
        "acked_loss_possible": False,
    }


def test_a_cut_of_the_dc_that_holds_the_whole_cluster_loses_nothing_while_its_kill_loses_it_all():
    """local-replicated's east cluster lives in dc-a with its clients: cut-mirror-link isolates
    dc-a, and east keeps writing (the placement drills saw it every time), where losing dc-a to a
    kill takes its quorum. The model said "writes stop" for both until this rule."""
    from dcdrill.spark import verdict

    east = next(c for c in stack.load_deployment("local-replicated").clusters if c.name == "east")
    p = rules.predictions(east)["dc-a"]
    assert rules.holds_everything(east, "dc-a")
    assert (p["writable"], p["quorum_survives"]) == (False, False)  # the kill
    cut = p["faults"]["isolate-dc"]
    assert (cut["writable"], cut["quorum_survives"], cut["acked_loss_possible"]) == (True, True, False)
    summary = {
        "faults": [{"fault": "isolate-dc", "target": "dc-a", "writes_continued": True, "held_ms": 20_000}],
        "counts": {"acked_lost": 0},
    }
    [check] = verdict.prediction_checks({"predictions": rules.predictions(east)}, summary)
    assert check["as_predicted"] and check["predicted"]["writes_why"].startswith("dc-a holds the whole cluster")
    killed = {**summary, "faults": [{**summary["faults"][0], "fault": "kill-dc", "writes_continued": False}]}
    assert verdict.prediction_checks({"predictions": rules.predictions(east)}, killed)[0]["as_predicted"]
    # A stretched cluster's DC never holds it all: its cut is its loss, as before.
    local = stack.load("local")
    assert not any(rules.holds_everything(local, dc.name) for dc in local.datacenters)
    assert "writable" not in rules.predictions(local)["dc-a"]["faults"]["isolate-dc"]
