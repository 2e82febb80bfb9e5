"""The verdict's prediction check: the topology model's forecast for losing a DC against what
the drill observed (pure Python, no Spark)."""

from dcdrill.spark import report, rollup, verdict
from tests.spark.test_rollup import words

TOPOLOGY = {
    "profile": "consistency-first",
    "predictions": {
        "dc-a": {"quorum_survives": True, "writable": False, "acked_loss_possible": False},
        "dc-c": {"quorum_survives": True, "writable": True, "acked_loss_possible": False},
    },
}


def summary(*faults, acked_lost=0):
    return {"counts": {"acked_lost": acked_lost}, "faults": list(faults)}


def fault(name, target, recovery_ms, held_ms=30_000):
    """A fault as the checker reports it (spark/rollup.recovery): one partition acknowledging every
    100 ms, silent from the fault's start until `recovery_ms` later (for good, if None)."""
    start = 1_000_000
    acks = list(range(start - 5_000, start, 100))
    if recovery_ms is not None:
        acks += range(start + recovery_ms, start + max(held_ms, recovery_ms) + 5_000, 100)
    [stats] = rollup.recovery(
        {("t", 0): rollup.AckTimeline(words(*acks))}, 1, [{"start_ms": start, "end_ms": start + held_ms}]
    )
    return {**stats, "fault": name, "target": target, "start_ms": start, "end_ms": start + held_ms}


def test_writes_that_stop_until_the_heal_match_a_prediction_of_stop():
    [check] = verdict.prediction_checks(TOPOLOGY, summary(fault("kill-dc", "dc-a", 40_800)))
    assert check["observed"]["writable"] is False and check["as_predicted"] is True


def test_writes_that_resume_during_the_fault_match_a_prediction_of_continue():
    [check] = verdict.prediction_checks(TOPOLOGY, summary(fault("kill-tiebreaker", "dc-c", 2_000)))
    assert check["observed"] == {"writable": True, "acked_loss": False, "recovery_ms": 2_000, "held_ms": 30_000}
    assert check["as_predicted"] is True


def test_surprises_are_not_as_predicted():
    # Predicted writable, but a partition never acknowledged again.
    assert not verdict.prediction_checks(TOPOLOGY, summary(fault("isolate-dc", "dc-c", None)))[0]["as_predicted"]
    # Predicted to stop, but every partition acknowledged again 5 s into a 30 s fault.
    assert not verdict.prediction_checks(TOPOLOGY, summary(fault("kill-dc", "dc-a", 5_000)))[0]["as_predicted"]
    # Writes stopped as predicted, but acknowledged records were lost where the model said impossible.
    assert not verdict.prediction_checks(TOPOLOGY, summary(fault("kill-dc", "dc-a", 40_800), acked_lost=3))[0][
        "as_predicted"
    ]


def test_a_fault_that_found_replicas_out_of_sync_carries_a_caveat():
    """An availability-first surprise (writes stopped where the model said continue) that the
    record explains: a partition's ISR was already short when the DC went."""
    short = {**fault("kill-dc", "dc-c", None), "isr_at_start": {"partitions": 6, "in_sync": 5}}
    [check] = verdict.prediction_checks(TOPOLOGY, summary(short))
    assert not check["as_predicted"]  # the comparison stays what it is; the caveat says why
    assert check["caveat"] == (
        "the prediction assumes every replica in sync when the DC went; 1 of 6 partitions had one out of sync"
    )
    assert check["caveat"] in report.prediction_text(check)
    full = {**fault("kill-dc", "dc-a", 40_800), "isr_at_start": {"partitions": 6, "in_sync": 6}}
    assert "caveat" not in verdict.prediction_checks(TOPOLOGY, summary(full))[0]


POWER = {
    "profile": "availability-first",
    "predictions": {
        d: {
            "quorum_survives": True,
            "writable": True,
            "acked_loss_possible": False,
            "faults": {
                "kill-dc": {"acked_loss_possible": False, "why": "they come back with every record"},
                "isolate-dc": {"acked_loss_possible": False, "why": "they come back with every record"},
                "power-loss": {"acked_loss_possible": True, "why": "a power loss takes what was not flushed"},
            },
        }
        for d in ("dc-a", "dc-b")
    },
}


def test_a_power_loss_is_checked_against_its_own_prediction_with_its_reason():
    [check] = verdict.prediction_checks(POWER, summary(fault("power-loss", "dc-a", 2_000), acked_lost=40))
    assert check["as_predicted"] and check["predicted"]["acked_loss_possible"] is True
    assert "a power loss takes what was not flushed" in report.prediction_text(check)
    [kill] = verdict.prediction_checks(POWER, summary(fault("kill-dc", "dc-a", 2_000), acked_lost=40))
    assert not kill["as_predicted"]  # the same loss after a kill is a surprise
    # A record written before per-fault predictions: the DC's own (the kill's) prediction.
    [old] = verdict.prediction_checks(TOPOLOGY, summary(fault("power-loss", "dc-a", 40_800)))
    assert old["predicted"] == TOPOLOGY["predictions"]["dc-a"]


def test_losses_of_a_drill_with_two_dc_losses_are_covered_by_either_prediction():
    s = summary(fault("isolate-dc", "dc-b", 2_000), fault("power-loss", "dc-a", None), acked_lost=40)
    cut, power = verdict.prediction_checks(POWER, s)
    assert cut["as_predicted"] and power["as_predicted"]  # writes stopped with both DCs gone: not one's promise
    assert "one of 2 DC losses of this drill" in cut["caveat"]


def test_only_dc_losses_with_a_prediction_are_checked():
    s = summary(fault("degrade-link", "dc-a", 100), fault("kill-dc", "dc-x", 100))
    assert verdict.prediction_checks(TOPOLOGY, s) == []
    assert verdict.prediction_checks({"profile": "consistency-first"}, summary(fault("kill-dc", "dc-a", 1))) == []


def test_dc_loss_faults_are_the_names_the_chaos_actions_record():
    """The verdict and the fault actions read the fault names from the drill record's module
    (tests/chaos/faults/test_aws.py checks what the actions write)."""
    from dcdrill.record import contents

    assert verdict.DC_LOSS_FAULTS is contents.DC_LOSS_FAULTS
    assert set(contents.DC_LOSS_FAULTS) == {"kill-dc", "stop-dc", "kill-tiebreaker", "isolate-dc", "power-loss"}


AVAILABILITY = {"profile": "availability-first", "unclean_leader_election": True}
CLEAN = {"phantoms": 0, "failed_present": 0, "ack_offset_mismatch": 0, "divergent_offsets": 0, "acked_lost": 40}


def writes_rule(*faults):
    _, _, results = verdict.evaluate(AVAILABILITY, {"counts": CLEAN, "faults": list(faults)})
    return next(r for r in results if r["rule"] == "writes-continued")


def test_availability_first_passes_when_every_partition_acks_again_before_the_heal():
    r = writes_rule(fault("kill-dc", "dc-a", 24_000, held_ms=60_000))
    assert r["passed"] and r["message"] == "writes continued during every fault"
    assert r["numbers"]["faults"][0] == {
        "fault": "kill-dc",
        "target": "dc-a",
        "recovery_ms": 24_000,
        "held_ms": 60_000,
        "partitions_acking_after_start": 1,
        "partitions": 1,
    }


def test_availability_first_fails_when_writes_resume_only_after_the_heal():
    """Records sent during the fault and acknowledged after the heal do not make writes 'continue'
    (the rule once counted them, by send time, and so passed a drill whose prediction check said
    the writes had stopped)."""
    r = writes_rule(fault("kill-dc", "dc-a", 37_200, held_ms=37_000))
    assert not r["passed"]
    assert r["message"] == (
        "kill-dc dc-a: the slowest partition acknowledged again 37.2 s after the start, not before the heal (37.0 s)"
    )
    [check] = verdict.prediction_checks(
        {"predictions": {"dc-a": {"writable": True, "acked_loss_possible": True}}},
        {"counts": CLEAN, "faults": [fault("kill-dc", "dc-a", 37_200, 37_000)]},
    )
    assert check["observed"]["writable"] is False  # the same reading as the rule's


def test_availability_first_fails_when_a_partition_never_acks_again_or_there_is_no_fault():
    r = writes_rule(fault("isolate-dc", "dc-a", None))
    assert not r["passed"] and r["message"] == (
        "isolate-dc dc-a: 0 of 1 partitions acknowledged anything after the fault started"
    )
    assert writes_rule()["message"] == "no fault in the record" and not writes_rule()["passed"]
