"""What the drill makes of its experiment's journal (dcdrill/drill.py)."""


def test_a_failover_without_translated_offsets_is_bad_input_not_a_missed_fault():
    from dcdrill.drill import _bad_input

    failed = {
        "run": [
            {
                "activity": {"name": "fail-over-consumers"},
                "status": "failed",
                "exception": [
                    "Traceback ...\n",
                    "chaoslib.exceptions.ActivityFailed: [failover-no-offsets] group dcdrill-verifier has no "
                    "offsets for east.t in west after 30s: ...\n",
                ],
            }
        ]
    }
    assert _bad_input(failed).startswith("[failover-no-offsets] group dcdrill-verifier has no offsets for east.t")
    assert _bad_input({"run": [{"activity": {"name": "kill-dc"}, "status": "failed", "exception": ["boom"]}]}) is None
