"""A DC lost three ways after the ISR shrank into it, on Kafka 3.9 (ZooKeeper) and 4.3 (KRaft):
each prediction of `dcdrill plan` beside what the drill measured.

    .venv/bin/python tests/benchmarks/power_loss_matrix.py [--out runs/power-loss-matrix]
        [--stack local-power-loss --stack kraft --stack local] [--experiment isolate-then-kill ...]
        [--table-only]

The stack is `local-power-loss` (factor 4, minInsync 2: two replicas per DC, so the ISR can
shrink into one DC and keep acknowledging; unclean election off; disks that can lose power), and
`kraft`, the same on KRaft with a controller in each DC (a project of its own: variant.py), and
`local`, the shipped `local` stack on the same disks (minInsync 3: every acknowledged record has a
replica outside either DC, so no way of losing one loses it; not run unless asked). Each
experiment cuts dc-b off until the ISR has shrunk into dc-a, then loses dc-a: `isolate-then-kill`
(SIGKILL: the hosts keep their page caches), `isolate-then-stop` (a clean stop) and
`isolate-then-power-loss` (the disks drop what was not durable), and `flush` is the last with
`--flush-each-write` (flush.messages=1), the control. One drill each, one lab at a time; each lab
is brought down after its drills. `--table-only` reads the summaries of an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from variant import project_with  # a sibling module: the script runs from its own folder

ROOT = Path(__file__).resolve().parents[2]
DCDRILL = [sys.executable, "-m", "dcdrill.cli"]
STACK = "local-power-loss"
EXPERIMENTS = {
    "isolate-then-kill": [],
    "isolate-then-stop": [],
    "isolate-then-power-loss": [],
    "flush": ["--flush-each-write"],
}


def on_kraft(config: dict) -> None:
    cluster = config["dcdrill:cluster"]
    cluster["coordination"] = "kraft"
    for dc in cluster["datacenters"]:
        dc["controllers"] = dc.pop("zookeepers")


def on_disks(config: dict) -> None:
    config.setdefault("dcdrill:lab", {})["powerLoss"] = True


# Each variant's stack, and the edit of its project of its own (None: the checkout's stack as shipped).
VARIANTS = {"local-power-loss": (STACK, None), "kraft": (STACK, on_kraft), "local": ("local", on_disks)}


def drill(variant: str, experiment: str, out: Path, env: dict) -> None:
    folder = out / variant / experiment
    if (folder / "report" / "summary.json").exists():
        print(f"{folder}: kept from an earlier run", file=sys.stderr)
        return
    shutil.rmtree(folder, ignore_errors=True)
    name = "isolate-then-power-loss" if experiment == "flush" else experiment
    subprocess.run(
        DCDRILL
        + [
            "drill",
            "--stack",
            VARIANTS[variant][0],
            "--experiment",
            name,
            "--dc",
            "dc-a",
            "--other-dc",
            "dc-b",
            "--hold",
            "15",
            "--run-dir",
            str(folder),
            *EXPERIMENTS[experiment],
        ],
        cwd=ROOT,
        env=env,
    )


def row(variant: str, experiment: str, folder: Path) -> str:
    summary = folder / "report" / "summary.json"
    if not summary.exists():
        journal = folder / "journal.json"
        failed = []
        if journal.exists():
            failed = [
                r["activity"]["name"] for r in json.loads(journal.read_text())["run"] if r["status"] != "succeeded"
            ]
        return f"| {variant} | {experiment} | | no verdict: {', '.join(failed) or 'no record'} failed | | |"
    s = json.loads(summary.read_text())
    [check] = [c for c in s["prediction_checks"] if c["target"] == "dc-a"]
    predicted = "possible" if check["predicted"]["acked_loss_possible"] else "impossible"
    c = s["counts"]
    return (
        f"| {variant} | {experiment} | {predicted} | {c['acked_lost']:,} of {c['acked']:,} "
        f"| {s['verdict'].upper()} | {'yes' if check['as_predicted'] else 'NO'} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/power-loss-matrix")
    ap.add_argument("--stack", action="append", choices=list(VARIANTS), help="default: local-power-loss, then kraft")
    ap.add_argument("--experiment", action="append", choices=list(EXPERIMENTS), help="default: all four")
    ap.add_argument("--table-only", action="store_true")
    args = ap.parse_args()
    variants = args.stack or ["local-power-loss", "kraft"]
    experiments = args.experiment or list(EXPERIMENTS)
    out = (ROOT / args.out).resolve()
    if not args.table_only:
        for variant in variants:
            env = dict(os.environ)
            stack, edit = VARIANTS[variant]
            if edit is not None:
                env["DCDRILL_PROJECT"] = str(project_with(stack, f"dcdrill-{variant}-power-loss-", edit))
            for experiment in experiments:
                drill(variant, experiment, out, env)
            subprocess.run(DCDRILL + ["lab", "down", "--stack", stack], cwd=ROOT, env=env)
    print(
        "| stack | loss of dc-a after the ISR shrank into it | acked loss predicted | acked lost | verdict "
        "| as predicted |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for variant in variants:
        for experiment in experiments:
            print(row(variant, experiment, out / variant / experiment))


if __name__ == "__main__":
    main()
