"""The record format every client shares (validation/clients.py): the value and headers carry
the producer's identity, and the partition is a pure function of the key."""

import json

from dcdrill.validation import clients


def test_record_value_carries_identity_and_size():
    v = clients.encode_value("p7", 42, 123456, 100)
    assert len(v) >= 100 - 8 and clients.decode_value(v) == ("p7", 42, 123456)
    assert clients.decode_value(b"not json") == (None, None, None)
    assert json.loads(v)["s"] == 42


def test_identity_headers_round_trip_and_foreign_headers_are_ignored():
    headers = clients.identity_headers("dc-a-p1", 42, "east")
    assert clients.identity_from_headers(headers) == ("dc-a-p1", 42, "east")
    # MM2 copies the headers as they are; another application's headers beside ours change nothing
    assert clients.identity_from_headers([("trace", b"x")] + headers) == ("dc-a-p1", 42, "east")
    assert clients.identity_from_headers(None) == (None, None, None)
    assert clients.identity_from_headers([("dcdrill-seq", b"not a number")]) == (None, None, None)


def test_partition_is_a_pure_function_of_the_key():
    assert clients.partition_for("k1", 6) == clients.partition_for("k1", 6)
    assert {clients.partition_for(f"k{i}", 6) for i in range(100)} == set(range(6))
