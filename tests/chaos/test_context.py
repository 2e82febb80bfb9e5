"""What every activity reads from its configuration (chaos/context.py): typed plan keys, a topic
of the drill's own, the DCs observers avoid, and clear errors naming the bad key."""

import pytest

from dcdrill.chaos import context
from dcdrill.infra.constants import DRILL_TOPIC_PREFIX


def test_a_run_dir_is_required():
    with pytest.raises(ValueError, match="configuration.run_dir is required"):
        context.run_dir({"stack": "local"})
    assert context.stack_name(None) == "local"


def test_each_record_folder_gets_a_topic_of_its_own_that_kafka_accepts(tmp_path):
    one = context.drill_topic({"run_dir": str(tmp_path / "x3" / "drill-1")})
    other = context.drill_topic({"run_dir": str(tmp_path / "matrix" / "drill-1")})  # same name, other series
    odd = context.drill_topic({"run_dir": str(tmp_path / "a drill: #1")})
    assert one != other and one.startswith(f"{DRILL_TOPIC_PREFIX}drill-1-") and other.startswith(DRILL_TOPIC_PREFIX)
    assert odd.startswith(f"{DRILL_TOPIC_PREFIX}a-drill---1-")
    assert context.drill_topic({"run_dir": str(tmp_path / "x3" / "drill-1")}) == one  # stable


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
