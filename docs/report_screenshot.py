"""`make docs`: the README's screenshot of a real report.

Verifies docs/example-record (a kill-dc drill of the `local` lab, kept as the drill wrote it
but for its report), renders the report with Debian's Chromium in a 1400 px window into
docs/report.png, and writes docs/report.json: what the screenshot shows (verdict, counts, the
report's sections). tests/test_docs.py compares that with what this code reports today, so a
change to the verifier or the report that the screenshot no longer shows fails until `make docs`.

    .venv/bin/python docs/report_screenshot.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
RECORD, PNG, SHOWN = DOCS / "example-record", DOCS / "report.png", DOCS / "report.json"


def report(record: Path, into: Path) -> Path:
    """The record's report as this code writes it, in a copy of the record under `into`."""
    copy = into / "record"
    shutil.copytree(record, copy, ignore=shutil.ignore_patterns("report"))
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", str(copy), "--quiet"], capture_output=True, text=True
    )
    if res.returncode not in (0, 1):
        raise SystemExit(f"{record}: dcdrill verify exited {res.returncode}: {res.stderr.strip()[-2000:]}")
    return copy / "report"


def shown(report_dir: Path) -> dict:
    """What a reader of the screenshot sees: the verdict, the counts and the report's sections."""
    summary = json.loads((report_dir / "summary.json").read_text())
    sections = re.findall(r"<h2[^>]*>(.*?)</h2>", (report_dir / "index.html").read_text(), flags=re.S)
    return {
        "verdict": summary["verdict"],
        "counts": summary["counts"],
        "sections": [re.sub(r"<[^>]+>", "", s).strip() for s in sections],
    }


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 1800) -> None:
    chromium = shutil.which("chromium")
    if not chromium:
        raise SystemExit("chromium is missing: `make setup` installs Debian's package")
    res = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            "--virtual-time-budget=5000",
            f"--screenshot={png}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode or not png.is_file():
        raise SystemExit(f"chromium made no screenshot: {res.stderr.strip()[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare docs/report.json with today's report")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dcdrill-docs-") as tmp:
        made = report(RECORD, Path(tmp))
        now = shown(made)
        if args.check:
            if json.loads(SHOWN.read_text()) != now:
                print(f"{PNG} shows an older report: run `make docs`", file=sys.stderr)
                return 1
            return 0
        screenshot(made / "index.html", PNG)
    SHOWN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PNG} and {SHOWN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
