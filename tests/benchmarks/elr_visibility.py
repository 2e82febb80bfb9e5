"""acks=1 records acknowledged while a DC is gone: read at once on Kafka 3.9 (ZooKeeper), unread
until the DC is back on Kafka 4.3 (KRaft, eligible leader replicas, KIP-966).

For each stack (`local`: 3.9 on ZooKeeper; `local-kraft`: 4.3.1 on KRaft, formatted by 4.3, so
ELR is on), a project of its own gets the stack with producer acks=1 and min.insync.replicas 3
(`consistency-acks` accepted: a consistency-first stack refuses acks=1 otherwise), and one
`kill-dc` of dc-a runs on it (`dcdrill drill`). Losing dc-a leaves 2 of the 4 replicas, fewer than
min.insync: `dcdrill plan` predicts writes go on both times, read on 3.9, UNREAD on 4.3. The
script reads each drill record (produced and consumed ledgers, faults.jsonl) and prints, for the
records acknowledged during the fault, how many a consumer read before the heal, and the median
time from acknowledgement to first read. One lab at a time; each is brought down after its drill.

    python tests/benchmarks/elr_visibility.py [--hold 30] [--out runs/elr-visibility]
    python tests/benchmarks/elr_visibility.py --table-only --out runs/elr-visibility
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcdrill import project  # noqa: E402
from dcdrill.infra.constants import project_dir  # noqa: E402

STACKS = ("local", "local-kraft")


def variant_project(stack: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"dcdrill-elr-{stack}-"))
    project.init(folder, force=True)
    doc = yaml.safe_load((project_dir() / f"Pulumi.{stack}.yaml").read_text())
    cfg = doc["config"]
    cfg["dcdrill:cluster"].setdefault("producer", {})["acks"] = "1"
    cfg["dcdrill:cluster"]["replication"]["minInsync"] = 3
    cfg["dcdrill:acceptRisks"] = sorted(set(cfg.get("dcdrill:acceptRisks", [])) | {"consistency-acks"})
    (folder / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def jsonl(folder: Path):
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                yield json.loads(line)


def row(stack: str, run: Path) -> dict:
    fault = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines() if line.strip()][-1]
    start, end = fault["start_ms"], fault["end_ms"]
    acked = {(r["producer_id"], r["seq"]): r["ack_ms"] for r in jsonl(run / "produced")
             if r["status"] == "ok" and start <= r["ack_ms"] < end}
    first_read: dict = {}
    for c in jsonl(run / "consumed"):
        key = (c["producer_id"], c["seq"])
        if key in acked:
            first_read[key] = min(first_read.get(key, c["consume_ms"]), c["consume_ms"])
    before_heal = [k for k, t in first_read.items() if t < end]
    delays = [first_read[k] - acked[k] for k in first_read]
    topo = json.loads((run / "topology.json").read_text())
    predicted = topo["predictions"][fault["target"]]
    summary = json.loads((run / "report" / "summary.json").read_text())
    return {"stack": stack, "kafka": topo["kafka_version"], "elr": topo.get("eligible_leader_replicas"),
            "predicted_visible": predicted.get("visible"), "held_s": (end - start) / 1000,
            "acked_during": len(acked), "read_before_heal": len(before_heal), "read_at_all": len(first_read),
            "median_ack_to_read_s": round(statistics.median(delays) / 1000, 1) if delays else None,
            "verdict": summary["verdict"], "acked_lost": summary["counts"]["acked_lost"]}


def print_table(rows: list[dict]) -> None:
    cols = ["stack", "kafka", "elr", "predicted_visible", "held_s", "acked_during", "read_before_heal",
            "read_at_all", "median_ack_to_read_s", "acked_lost", "verdict"]
    table = [[str(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(cols, *table)]
    for line in [cols] + table:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(line, widths)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hold", type=float, default=30.0, help="seconds the fault is held")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "elr-visibility")
    ap.add_argument("--table-only", action="store_true", help="read the records already in --out")
    args = ap.parse_args()
    args.out = args.out.resolve()
    dcdrill = str(Path(sys.executable).with_name("dcdrill"))
    for stack in STACKS if not args.table_only else ():
        env = {**os.environ, "DCDRILL_PROJECT": str(variant_project(stack))}
        for other in STACKS:
            subprocess.run([dcdrill, "lab", "down", "--stack", other], env=env, check=True)
        try:
            subprocess.run([dcdrill, "drill", "--stack", stack, "--experiment", "kill-dc", "--dc", "dc-a",
                            "--hold", str(args.hold), "--run-dir", str(args.out / stack)], env=env)
        finally:
            subprocess.run([dcdrill, "lab", "down", "--stack", stack], env=env, check=True)
    rows = [row(stack, args.out / stack) for stack in STACKS if (args.out / stack / "report" / "summary.json").exists()]
    print(f"\nkill-dc dc-a, acks=1, min.insync.replicas 3 (2 of 4 replicas survive), {args.hold:g} s hold:")
    print_table(rows)


if __name__ == "__main__":
    main()
