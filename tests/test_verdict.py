"""The verdict's prediction check: the topology model's forecast for losing a DC against what
the drill observed (pure Python, no Spark)."""
from spark import verdict

TOPOLOGY = {"profile": "consistency-first", "predictions": {
    "dc-a": {"quorum_survives": True, "writable": False, "acked_loss_possible": False},
    "dc-c": {"quorum_survives": True, "writable": True, "acked_loss_possible": False}}}


def summary(*faults, acked_lost=0):
    return {"counts": {"acked_lost": acked_lost}, "faults": list(faults)}


def fault(name, target, recovery_ms, held_ms=30_000):
    return {"fault": name, "target": target, "start_ms": 1_000, "end_ms": 1_000 + held_ms, "recovery_ms": recovery_ms}


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
    assert not verdict.prediction_checks(TOPOLOGY, summary(fault("kill-dc", "dc-a", 40_800),
                                                           acked_lost=3))[0]["as_predicted"]


def test_only_dc_losses_with_a_prediction_are_checked():
    s = summary(fault("degrade-link", "dc-a", 100), fault("kill-dc", "dc-x", 100))
    assert verdict.prediction_checks(TOPOLOGY, s) == []
    assert verdict.prediction_checks({"profile": "consistency-first"}, summary(fault("kill-dc", "dc-a", 1))) == []


def test_dc_loss_faults_are_the_names_the_chaos_actions_record():
    """The list here and the fault names chaos/ writes to faults.jsonl must not drift apart."""
    from pathlib import Path

    actions = "".join((Path(__file__).parent.parent / "chaos" / d / "actions.py").read_text() for d in ("lab", "aws"))
    assert all(f'"{name}"' in actions for name in verdict.DC_LOSS_FAULTS)
