"""The docs' own limits: docs/benchmarks.md is tables of one line a row, no cell over 300
characters (what was tried before is in git); the README is at most 250 lines, dates no run
(each figure's date sits beside it in docs/benchmarks.md, with its command) and shows a
screenshot of the report this code draws for a real record."""

import json
import re
from pathlib import Path

from dcdrill.record.reader import RecordReader

ROOT = Path(__file__).resolve().parents[1]
CELL_MAX, README_MAX = 300, 250


def _cells(text: str):
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            for cell in line.strip().strip("|").split(" | "):
                yield n, cell


def test_no_benchmark_table_cell_runs_over_300_characters():
    long = [(n, cell[:60]) for n, cell in _cells((ROOT / "docs" / "benchmarks.md").read_text()) if len(cell) > CELL_MAX]
    assert not long, long


def test_the_readme_is_short_and_dates_no_run():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX
    dated = [line for line in text.splitlines() if re.search(r"\b20\d\d-[01]\d-[0-3]\d\b", line)]
    assert not dated, dated


def test_the_checks_see_what_they_refuse():
    assert [n for n, c in _cells("| a | " + "x" * 301 + " |\n") if len(c) > CELL_MAX] == [1]


def test_the_readme_shows_the_committed_records_report_as_this_code_draws_it():
    """docs/report.png is docs/example-record's report (`make docs`); docs/report.json says what
    it shows, and today's verify of that record must show the same, or `make docs` is due."""
    import subprocess
    import sys

    assert "docs/report.png" in (ROOT / "README.md").read_text()
    png = (ROOT / "docs" / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1400  # its width
    # A real drill's record: the lab's hosts ran its clients, and its fault took effect.
    record = ROOT / "docs" / "example-record"
    agents = [json.loads(line) for line in (record / "agents.jsonl").read_text().splitlines()]
    assert any(str(a.get("host") or "").endswith(".lab") for a in agents), agents
    faults = RecordReader(record).faults()
    assert faults and all(f["acted_ms"] and f["end_ms"] for f in faults), faults
    res = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "report_screenshot.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
