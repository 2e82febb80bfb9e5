"""The live group's rows (validation/consumer.py): each delivery, as written, is a consumed row of
record/models.py, the record's identity read from its value, and a failed-over member names the
cluster it reads."""

import pytest

from dcdrill.record import models
from dcdrill.validation import clients, consumer

CFG = {"consumer_id": "c1", "group": "dcdrill-verifier", "dc": "dc-a"}


@pytest.mark.parametrize("cluster", [None, "west"])
def test_a_delivery_is_a_consumed_row(cluster):
    cfg = {**CFG, **({"cluster": cluster} if cluster else {})}
    row = consumer._delivery(cfg, "dcdrill-t", 3, 41, clients.encode_value("p2", 7, 1000, 64), 1234)
    models.validated(models.Consumed, row, "row")
    assert (row["producer_id"], row["seq"], row["offset"], row.get("cluster")) == ("p2", 7, 41, cluster)


def test_a_value_not_of_the_workloads_is_a_row_without_identity():
    row = consumer._delivery(CFG, "dcdrill-t", 0, 5, b"someone else's", 10)
    models.validated(models.Consumed, row, "row")
    assert (row["producer_id"], row["seq"]) == (None, None)
