"""The same DC losses on ZooKeeper (`local`) and on KRaft (`local-kraft`), drilled N times each:
the README's coordination table.

    .venv/bin/python tests/benchmarks/coordination_table.py [--repeat 3] [--stack local ...]
        [--experiment kill-dc ...] [--out runs/coordination] [--table-only]

For each stack (one lab at a time: the other is brought down first) and each experiment, runs
`dcdrill drill --repeat N`, then prints one Markdown row per (stack, experiment) from the drills'
summaries: verdicts, writes back after the fault's start (the slowest partition's first
acknowledgement again; min / median / max), acknowledged loss, the quorum leader's change and
the lost brokers' fencing (spark/coordination.py), and how often the model's prediction held.
`kill-dc@quorum-leader` kills whichever DC holds the quorum's leader as each drill starts.
`--table-only` reads the summaries of an earlier run without drilling.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DCDRILL = [sys.executable, "-m", "dcdrill.cli"]


def drill_series(stack: str, experiment: str, repeat: int, out: Path) -> None:
    """`experiment` is an experiment's name, or NAME@DC for another target than the default (dc-a),
    such as kill-dc@quorum-leader. A series that ran to the end (history.html) is kept."""
    folder = out / stack / experiment
    if (folder / "history.html").exists():
        print(f"{folder}: kept from an earlier run", file=sys.stderr)
        return
    shutil.rmtree(folder, ignore_errors=True)
    name, _, dc = experiment.partition("@")
    subprocess.run(
        DCDRILL
        + ["drill", "--stack", stack, "--experiment", name, "--repeat", str(repeat), "--run-dir", str(folder)]
        + (["--dc", dc] if dc else []),
        cwd=ROOT,
    )


def spread(values: list, unit: float = 1000.0) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return " / ".join(f"{v / unit:.1f}" for v in (min(values), statistics.median(values), max(values))) + " s"


def row(stack: str, experiment: str, folder: Path) -> str:
    summaries = [json.loads(p.read_text()) for p in sorted(folder.glob("drill-*/report/summary.json"))]
    if not summaries:
        return f"| `{stack}` | {experiment} | no verified drill | | | | | |"
    n = len(summaries)
    faults = [f for s in summaries for f in s["faults"]]
    targets = sorted({f["target"] for f in faults})
    moves = [f.get("coordination") or {} for f in faults]
    lost = [s["counts"]["acked_lost"] for s in summaries]
    checks = [c for s in summaries for c in s.get("prediction_checks") or []]
    continued = sum(f["writes_continued"] for f in faults)
    moved = [m for m in moves if m.get("leader_had_to_move")]
    leader = (
        f"moved {len(moved)}/{n}: {spread([m.get('leader_change_ms') for m in moved])}" if moved else f"kept {n}/{n}"
    )
    stall = max((m.get("quorum_lost_ms") or 0 for m in moves), default=0)
    name, _, dc = experiment.partition("@")
    what = (
        f"{name} of the quorum leader's DC ({'/'.join(targets)})"
        if dc == "quorum-leader"
        else f"{name} {'/'.join(targets)}"
    )
    return (
        f"| `{stack}` | {what} | pass {sum(s['verdict'] == 'pass' for s in summaries)}/{n} "
        f"| {spread([f['recovery_ms'] for f in faults])} (continued {continued}/{n}) "
        f"| {sum(x > 0 for x in lost)}/{n} drills"
        + (f" ({', '.join(str(x) for x in lost if x)})" if any(lost) else "")
        + f" | {leader}"
        + (f"; no quorum up to {stall / 1000:.1f} s" if stall else "")
        + f" | {spread([m.get('fencing_ms') for m in moves])} "
        f"| {sum(c['as_predicted'] for c in checks)}/{len(checks)} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stack", action="append", help="default: local and local-kraft")
    ap.add_argument(
        "--experiment",
        action="append",
        help="NAME or NAME@DC (default: kill-dc, kill-dc@quorum-leader, isolate-dc, tiebreaker-loss)",
    )
    ap.add_argument("--out", default="runs/coordination")
    ap.add_argument("--table-only", action="store_true")
    args = ap.parse_args()
    stacks = args.stack or ["local", "local-kraft"]
    experiments = args.experiment or ["kill-dc", "kill-dc@quorum-leader", "isolate-dc", "tiebreaker-loss"]
    out = (ROOT / args.out).resolve()
    if not args.table_only:
        for stack in stacks:
            for experiment in experiments:
                drill_series(stack, experiment, args.repeat, out)
            subprocess.run(DCDRILL + ["lab", "down", "--stack", stack], cwd=ROOT)
    print(
        "| stack | experiment | verdict | writes back after (min / median / max) | acknowledged loss "
        "| quorum leader | lost brokers fenced after | prediction held |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for stack in stacks:
        for experiment in experiments:
            print(row(stack, experiment, out / stack / experiment))


if __name__ == "__main__":
    main()
