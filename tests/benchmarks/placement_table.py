"""MirrorMaker 2 in the target's DC or in the source's: the same drills on both placements.

"Remote reading is safer than remote writing": MM2 beside the target reads the source across the
link and writes locally. This runs, for each placement (`local-replicated`: MM2 in dc-b, the
target's; `local-replicated-mm2-source`: MM2 in dc-a, the source's) and each fault (kill-source-dc,
cut-mirror-link), N drills (`dcdrill drill --repeat N`), and prints one row per drill and a
median row per pair: the RPO (records and seconds), replication duplicates, MM2's Connect
rebalances and restarts from the fault on (the drill record's, read from MM2's log), and the
catch-up after the heal. One lab
at a time: the other placement's lab is brought down first.

    python tests/benchmarks/placement_table.py [--repeat 3] [--hold 20] [--out runs/placement]
    python tests/benchmarks/placement_table.py --table-only --out runs/placement
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcdrill.infra import ansible  # noqa: E402

STACKS = {"target": "local-replicated", "source": "local-replicated-mm2-source"}
FAULTS = ("kill-source-dc", "cut-mirror-link")


def row(placement: str, fault: str, run: Path) -> dict:
    s = json.loads((run / "report" / "summary.json").read_text())
    m = next(iter(s["mirrors"].values()))
    return {
        "placement": placement,
        "fault": fault,
        "drill": run.name,
        "verdict": s["verdict"],
        "rpo_records": m["rpo"]["records"],
        "rpo_s": m["rpo"]["seconds"],
        "duplicates": m["counts"]["replication_duplicates"],
        "not_mirrored": m["counts"]["not_mirrored"],
        "catch_up_s": None if m["catch_up_ms"] is None else m["catch_up_ms"] / 1000,
        "steady_lag_p99_s": None if m["steady_lag_ms"]["p99"] is None else m["steady_lag_ms"]["p99"] / 1000,
        "skipped": sum(fo["failover_skipped"] for fo in s.get("failovers") or []),
        # from the first fault on, as the drill read MM2's log (summary `mm2`, RECORD.md)
        "rebalances": (m.get("mm2") or {}).get("rebalances"),
        "restarts": (m.get("mm2") or {}).get("restarts"),
    }


def med(rows: list[dict], key: str):
    vals = [r[key] for r in rows if r[key] is not None]
    return round(statistics.median(vals), 1) if vals else None


def table(rows: list[dict]) -> str:
    cols = [
        "placement",
        "fault",
        "drill",
        "verdict",
        "rpo_records",
        "rpo_s",
        "duplicates",
        "not_mirrored",
        "rebalances",
        "restarts",
        "catch_up_s",
        "steady_lag_p99_s",
        "skipped",
    ]
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join("-" if r[c] is None else str(r[c]) for c in cols) + " |")
    pairs = sorted({(r["placement"], r["fault"]) for r in rows})
    out.append("")
    out.append("medians: | placement | fault | RPO records | RPO s | duplicates | rebalances | restarts | catch-up s |")
    for p, f in pairs:
        rs = [r for r in rows if (r["placement"], r["fault"]) == (p, f)]
        out.append(
            f"| {p} | {f} | {med(rs, 'rpo_records')} | {med(rs, 'rpo_s')} | {med(rs, 'duplicates')} | "
            f"{med(rs, 'rebalances')} | {med(rs, 'restarts')} | {med(rs, 'catch_up_s')} |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hold", type=float, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "placement")
    ap.add_argument("--table-only", action="store_true", help="print the table of drills already in --out")
    args = ap.parse_args()
    rows = []
    for placement, stack in STACKS.items():
        if not args.table_only:
            for other in STACKS.values():
                if other != stack and ansible.inventory_path(other).exists():
                    subprocess.run([sys.executable, "-m", "dcdrill.cli", "lab", "down", "--stack", other], check=True)
        for fault in FAULTS:
            series = args.out / placement / fault
            if not args.table_only:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "dcdrill.cli",
                        "drill",
                        "--stack",
                        stack,
                        "--experiment",
                        fault,
                        "--repeat",
                        str(args.repeat),
                        "--hold",
                        str(args.hold),
                        "--run-dir",
                        str(series),
                    ]
                )
            for run in sorted(series.glob("drill-*")):
                if (run / "report" / "summary.json").exists():
                    rows.append(row(placement, fault, run))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
