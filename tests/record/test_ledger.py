"""The crash-safe JSON Lines ledger: format, torn lines, SIGKILL mid-write, write errors."""
import os
import signal
import subprocess
import sys
import time

import pytest

from infra.constants import ROOT
from record.ledger import Ledger, LedgerError, read


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
            "from record.ledger import Ledger\n"
            "led = Ledger(%r)\n"
            "i = 0\n"
            "while True:\n"
            "    led.write({'seq': i, 'pad': 'x' * 500}); i += 1\n") % (str(ROOT), str(path))
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
