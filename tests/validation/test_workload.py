"""The workload (validation/workload.py): its drain ends when the consumers have read what the
producers were acknowledged, and its spec refuses transactions it cannot drive."""

import pytest

from dcdrill.validation import clients
from dcdrill.validation import workload as wl


def _producer(acked_to: dict, final: bool = True) -> dict:
    return {"producer_id": "p", "ok": 1, "acked_to": acked_to, "final": final}


def test_the_drain_ends_once_every_partition_is_read_to_its_last_acknowledged_offset():
    from dcdrill.validation.workload import caught_up

    a, b = clients.position_key(None, "t", 0), clients.position_key(None, "t", 1)
    producers = [_producer({a: 40, b: 7}), _producer({a: 41})]
    assert caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 41}}, {"consumer_id": "c2", "read_to": {b: 9}}])
    assert not caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 40, b: 9}}])  # p2's 41 not read yet
    assert not caught_up(producers + [{"consumer_id": "c1", "read_to": {a: 41}}])  # partition 1 not read at all
    # A producer without its final snapshot (killed) may have acknowledged more than it said.
    assert not caught_up(
        [_producer({a: 40}), _producer({a: 41}, final=False), {"consumer_id": "c", "read_to": {a: 99}}]
    )
    # Another cluster's copy is another partition: a failed-over group's reads do not count.
    assert not caught_up(
        [_producer({a: 40}), {"consumer_id": "c", "read_to": {clients.position_key("west", "t", 0): 99}}]
    )
    assert not caught_up([{"consumer_id": "c", "read_to": {a: 1}}])  # no producer: nothing says what to wait for


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({"client": "confluent", "transaction_size": 10}, "transactions need a size > 0 and the java client"),
        ({"client": "java", "transaction_size": 0}, "transactions need a size > 0"),
        ({"client": "java", "transaction_size": 10, "abort_fraction": 1.0}, "abort_fraction must be in"),
        ({"client": "java", "abort_fraction": 0.5}, "needs transactions"),
    ],
)
def test_transactions_are_refused_where_the_workload_cannot_drive_them(given, why):
    with pytest.raises(ValueError, match=why):
        wl.WorkloadSpec.for_client(**given).check()
