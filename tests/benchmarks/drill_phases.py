"""Where a drill's wall time goes: runs `dcdrill drill` on a lab that is already up and prints
each phase (from the Chaos Toolkit journal's activity times and dcdrill's own phases) with its
share of the wall time.

    .venv/bin/python tests/benchmarks/drill_phases.py [--experiment kill-dc] [--hold 30] [--rate 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path


def ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--experiment", default="kill-dc")
    ap.add_argument("--hold", type=float, default=30)
    ap.add_argument("--rate", type=float, default=200, help="records/s per producer (the drill's default 200)")
    args = ap.parse_args()
    run = Path("runs") / f"bench-{time.strftime('%Y%m%d-%H%M%S')}-{args.experiment}"
    t0 = time.monotonic()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "dcdrill.cli",
            "drill",
            "--stack",
            args.stack,
            "--experiment",
            args.experiment,
            "--hold",
            str(args.hold),
            "--rate",
            str(args.rate),
            "--run-dir",
            str(run),
        ],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    print(f"drill exit {res.returncode}, wall {wall:.1f}s ({'within' if wall <= 300 else 'OVER'} the 5-minute goal)")
    journal = json.loads((run / "journal.json").read_text())
    phases = json.loads((run / "phases.json").read_text())
    acts = journal["run"]
    print(f"{'phase':<28}{'seconds':>9}{'share':>8}")
    exp_total = 0.0
    for i, r in enumerate(acts):  # an activity's share runs until the next starts (its pauses included)
        until = ts(acts[i + 1]["start"]) if i + 1 < len(acts) else ts(r["end"])
        took = until - ts(r["start"])
        exp_total += took
        print(f"{r['activity']['name']:<28}{took:9.1f}{took / wall:8.0%}")
    other = phases.get("experiment", 0) - exp_total
    print(f"{'chaos start, hypotheses, rollbacks':<28}{other:9.1f}{other / wall:8.0%}")
    for k in ("lab up", "verify"):
        print(f"{k:<28}{phases.get(k, 0):9.1f}{phases.get(k, 0) / wall:8.0%}")


if __name__ == "__main__":
    main()
