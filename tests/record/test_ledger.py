"""The crash-safe JSON Lines ledger: format, torn lines, SIGKILL mid-write, write errors."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from dcdrill.record.ledger import Ledger, LedgerError, read
from tests import ROOT


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
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from record.ledger import Ledger\n"
        f"led = Ledger({str(path)!r})\n"
        "i = 0\n"
        "while True:\n"
        "    led.write({'seq': i, 'pad': 'x' * 500}); i += 1\n"
    )
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


def test_a_write_error_breaks_the_ledger_for_good(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    led = Ledger(tmp_path / "b.jsonl")
    led.write({"a": 1})
    real = led._fd
    full = os.open("/dev/full", os.O_WRONLY)
    led._fd = full
    with pytest.raises(LedgerError, match="cannot write ledger"):
        led.write({"a": 2})
    led._fd = real  # the disk has room again: still nothing is appended after a possible fragment
    with pytest.raises(LedgerError, match="is broken: write failed"):
        led.write({"a": 3})
    with pytest.raises(LedgerError, match="is broken"):
        led.close()
    os.close(full)
    assert read(tmp_path / "b.jsonl")[0] == [{"a": 1}]


def test_an_fsync_error_surfaces(tmp_path, monkeypatch):
    led = Ledger(tmp_path / "f.jsonl")
    led.write({"a": 1})

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(LedgerError, match="cannot fsync ledger .*Input/output error"):
        led.sync()
    with pytest.raises(LedgerError, match="is broken: fsync failed"):
        led.write({"a": 2})
    monkeypatch.undo()
    with pytest.raises(LedgerError):
        led.close()


def _produced(seq, status="ok"):
    return {
        "producer_id": "p1",
        "seq": seq,
        "topic": "t",
        "partition": seq % 2,
        "key": f"k{seq % 3}",
        "send_ms": 1000 + seq,
        "status": status,
        "ack_ms": 1001 + seq,
        "offset": seq if status == "ok" else None,
        "error": None,
        "dc": "dc-a",
    }


def test_recover_in_flight_fills_every_reserved_seq_without_a_row(tmp_path):
    from dcdrill.record.ledger import IntentLog, recover_in_flight

    intents = IntentLog(
        tmp_path / "intents.jsonl",
        {"producer_id": "p1", "topic": "t", "dc": "dc-a", "keys": ["k0", "k1", "k2"], "partitions": [0, 1, 1]},
    )
    for seq in range(70):  # two blocks reserved at a drill's pace: up to 128; the process is then "killed"
        intents.before_send(seq, 5000 + 10 * seq)
    ledger = tmp_path / "p1.jsonl"
    rows = [_produced(s) for s in range(60) if s not in (7, 8)]  # 7 and 8 were still in flight
    ledger.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"producer_id": "p1", "seq": 60, "sta')  # torn
    assert recover_in_flight(ledger, tmp_path / "intents.jsonl") == 128 - 58
    got, torn = read(ledger)
    assert not torn and sorted(r["seq"] for r in got) == list(range(128))
    info = {r["seq"]: r for r in got if r["status"] == "info"}
    assert sorted(info) == [7, 8] + list(range(60, 128))
    assert (info[7]["partition"], info[7]["key"], info[7]["send_ms"], info[7]["offset"]) == (1, "k1", 5000, None)
    assert info[100]["send_ms"] == 5640  # the second block was reserved when seq 64 was sent
    assert recover_in_flight(ledger, tmp_path / "intents.jsonl") == 0  # idempotent


def test_the_intent_log_fsyncs_about_ten_times_a_second_at_any_rate(tmp_path):
    """Blocks used up in under 0.1 s double, so 200,000 sends in 2 s reserve a few dozen blocks,
    not 3,125; the sends of a drill's pace go back to blocks of 64."""
    from dcdrill.record.ledger import IntentLog, parse

    intents = IntentLog(
        tmp_path / "i.jsonl", {"producer_id": "p1", "topic": "t", "dc": None, "keys": ["k0"], "partitions": [0]}
    )
    seq = 0
    for seq in range(200_000):  # 100 records a millisecond
        intents.before_send(seq, 1_000 + seq // 100)
    marks = [m for m in parse((tmp_path / "i.jsonl").read_bytes(), "i")[0] if "reserved" in m]
    assert 20 <= len(marks) <= 40 and marks[-1]["reserved"] > 200_000
    assert intents.reserved - seq <= 2 * 100 * 200  # unsent but reserved: at most a block of ~0.2 s
    now = 3_000
    first = seq + 1
    for seq in range(first, first + 400_000 - 1):  # then 5 records a second... as the blocks shrink
        if seq >= intents.reserved:
            now += 1_000
        intents.before_send(seq, now)
        if intents.block == IntentLog.BLOCK:
            break
    assert intents.block == IntentLog.BLOCK


def test_a_clean_stop_bounds_recovery_by_what_was_sent(tmp_path):
    from dcdrill.record.ledger import IntentLog, recover_in_flight

    intents = IntentLog(
        tmp_path / "i.jsonl", {"producer_id": "p1", "topic": "t", "dc": None, "keys": ["k0"], "partitions": [0]}
    )
    for seq in range(5):
        intents.before_send(seq, 1)
    intents.close(sent=5)
    ledger = tmp_path / "p1.jsonl"
    ledger.write_text("".join(json.dumps(_produced(s)) + "\n" for s in range(5)))
    assert recover_in_flight(ledger, tmp_path / "i.jsonl") == 0
