"""Comments and docstrings say what and why; a measured figure (a ratio, a percentile, a run count,
a date, a time something took) belongs in docs/benchmarks.md beside the command that measures it."""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("chaos", "dcdrill", "infra", "record", "roles", "spark", "validation")
MEASURED = re.compile(
    r"\d(\.\d+)?\s?×"  # a ratio
    r"|\bp(50|95|99)\s+[\d,.]+\s?(ms|s)\b"  # a percentile's value
    r"|\b\d+ (of|in) \d+ (runs|drills|rounds)\b"  # a count of runs
    r"|\b20\d\d-[01]\d-[0-3]\d\b"  # the day a figure was taken
    r"|\b(took|measured at|ran in)\s+[\d.,]+\s?(s|ms|min)\b",  # how long it took
    re.IGNORECASE,
)


def _texts(path: Path):
    """Each comment and docstring of a Python file, with its line."""
    src = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield (node.body[0].lineno if node.body else 0), doc


def measured_figures(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{n}: {m.group(0)}" for n, text in _texts(path) for m in MEASURED.finditer(text)]


def test_no_comment_or_docstring_in_the_source_holds_a_measured_figure():
    files = [p for top in SOURCE for p in sorted((ROOT / top).rglob("*.py"))]
    assert len(files) > 100
    found = [hit for p in files for hit in measured_figures(p)]
    assert not found, found


def test_the_scan_sees_what_it_refuses(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    sample = tmp_path / "m.py"
    sample.write_text(
        '"""Took 12.5 s; 0.84× the parent."""\n'
        "# p99 1,189 ms\n"
        "# 4 of 9 runs on 2026-11-29\n"
        "TIMEOUT = 18  # the session timeout is 18 s: a constant the code sets\n"
    )
    assert [h.split(": ", 1)[1] for h in measured_figures(sample)] == [
        "p99 1,189 ms",
        "4 of 9 runs",
        "2026-11-29",
        "Took 12.5 s",
        "0.84×",
    ]
