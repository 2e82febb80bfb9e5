"""What every activity reads from its configuration (chaos/context.py): typed plan keys, a topic
of the drill's own, the DCs observers avoid, and clear errors naming the bad key."""

import pytest

from dcdrill.chaos import context


def test_a_run_dir_is_required():
    with pytest.raises(ValueError, match="configuration.run_dir is required"):
        context.run_dir({"stack": "local"})
    assert context.stack_name(None) == "local"


def test_every_drill_record_folder_gets_its_own_topic(tmp_path):
    """Two series both have a drill-1, and a --matrix series one per setting: a topic named after
    the folder alone was written by several drills, whose audit then saw the others' records
    (phantoms) and whose topic kept the first drill's settings."""
    a, b = (
        context.drill_topic({"run_dir": str(tmp_path / s / "drill-1")}) for s in ("x3", "matrix/acks-1_min-insync-2")
    )
    assert a != b and a.startswith("dcdrill-drill-1-") and b.startswith("dcdrill-drill-1-")
    assert context.drill_topic({"run_dir": str(tmp_path / "x3" / "drill-1")}) == a  # start and audit agree
    assert context.drill_topic({"run_dir": str(tmp_path / "a b+c")}).startswith("dcdrill-a-b-c-")


def test_plan_keys_arrive_typed_or_are_refused_naming_the_key():
    assert context.producer_client({}) == ("confluent", None)  # the plan model's defaults
    assert context.producer_client({"client": "java", "idempotence": "off"}) == ("java", False)
    assert context.transactions({"transaction_size": 10, "abort_fraction": 0.25}) == (10, 0.25)
    assert context.transactions({}) == (None, 0.0)
    with pytest.raises(ValueError, match=r"configuration\.transaction_size: '10'"):
        context.transactions({"transaction_size": "10"})  # a string is not re-parsed


def test_observers_avoid_the_target_by_default_and_refuse_what_is_not_a_dc():
    assert context.observers_avoid({"stack": "local", "dc": "dc-a"}) == ("dc-a",)
    assert context.observers_avoid({"stack": "local", "observers_avoid": ["dc-b", "dc-a"]}) == ("dc-b", "dc-a")
    assert context.observers_avoid({"stack": "local"}) == ()
    with pytest.raises(ValueError, match="is not a DC name"):
        context.observers_avoid({"stack": "local", "observers_avoid": [3]})
    with pytest.raises(ValueError, match="unknown DC 'dc-z'; valid: dc-a, dc-b, dc-c"):
        context.observers_avoid({"stack": "local", "dc": "dc-z"})
