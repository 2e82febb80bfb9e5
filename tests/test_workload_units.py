"""Ledger format, crash safety and outcome classification (no cluster needed)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from kafka import errors as E

from validation import clients, outcomes
from validation.ledger import Ledger, LedgerError, read


def test_ledger_rows_round_trip(tmp_path):
    with Ledger(tmp_path / "x.jsonl") as led:
        led.write({"a": 1})
        led.write_many([{"a": 2}, {"a": 3}])
    rows, torn = read(tmp_path / "x.jsonl")
    assert rows == [{"a": 1}, {"a": 2}, {"a": 3}] and torn is False


def test_torn_last_line_is_skipped_but_middle_garbage_is_an_error(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b')
    assert read(f) == ([{"a": 1}, {"a": 2}], True)
    f.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    with pytest.raises(ValueError, match=r"x.jsonl:2: malformed"):
        read(f)


def test_sigkill_mid_write_leaves_every_complete_line_parseable(tmp_path):
    path = tmp_path / "k.jsonl"
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from validation.ledger import Ledger\n"
            "led = Ledger(%r)\n"
            "i = 0\n"
            "while True:\n"
            "    led.write({'seq': i, 'pad': 'x' * 500}); i += 1\n") % (os.getcwd(), str(path))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 20
    while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rows, _ = read(path)
    assert len(rows) > 100
    assert [r["seq"] for r in rows] == list(range(len(rows)))  # dense: nothing lost before the tear


def test_ledger_write_error_raises(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    led = Ledger(tmp_path / "ok.jsonl")
    os.dup2(os.open("/dev/full", os.O_WRONLY), led._fd)  # the disk is now full
    with pytest.raises(LedgerError, match="cannot write ledger"):
        led.write({"a": 1})


@pytest.mark.parametrize("exc,retries,expected", [
    (E.NotEnoughReplicasError(), 0, "fail"),
    (E.NotEnoughReplicasError(), 3, "info"),        # an earlier attempt may have been written
    (E.NotEnoughReplicasAfterAppendError(), 0, "info"),
    (E.NotLeaderForPartitionError(), 0, "info"),   # may be appended already (seen in a kill-dc drill)
    (E.RequestTimedOutError(), 0, "info"),
    (E.KafkaConnectionError(), 0, "info"),
    (E.KafkaTimeoutError("Failed to update metadata after 5.0 secs."), 0, "fail"),
    (E.KafkaTimeoutError("Batch expired"), 0, "info"),
])
def test_outcome_classification(exc, retries, expected):
    assert outcomes.classify(exc, retries) == expected


def test_record_value_carries_identity_and_size():
    v = clients.encode_value("p7", 42, 123456, 100)
    assert len(v) >= 100 - 8 and clients.decode_value(v) == ("p7", 42, 123456)
    assert clients.decode_value(b"not json") == (None, None, None)
    assert json.loads(v)["s"] == 42


def test_partition_is_a_pure_function_of_the_key():
    assert clients.partition_for("k1", 6) == clients.partition_for("k1", 6)
    assert {clients.partition_for(f"k{i}", 6) for i in range(100)} == set(range(6))
