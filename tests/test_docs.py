"""The docs' own limits: docs/benchmarks.md is tables of one line a row, no cell over 300
characters (what was tried before is in git); the README is at most 250 lines and dates no run
(each figure's date sits beside it in docs/benchmarks.md, with its command)."""

import re
from pathlib import Path

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
