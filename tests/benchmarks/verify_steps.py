"""Where one `dcdrill verify` spends its time: verify.py's steps called one after another in one
process, each timed (the command overlaps some of them; this one does not, so each step's time is
its own), a fresh process per RUN (cold, as a user's verify is). RUN is a drill record, e.g. one
`verifier_vs_duckdb.py --keep --shape drill-heavy` kept.

    .venv/bin/python tests/benchmarks/verify_steps.py RUN [RUN ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def steps(run: str) -> None:
    from dcdrill.record.reader import RecordReader
    from dcdrill.spark import checker, clock_alignment, identities, memory, session
    from dcdrill.spark.ledgers import load

    began = last = time.monotonic()

    def took(label: str) -> None:
        nonlocal last
        now = time.monotonic()
        print(f"  {label:44s} {now - last:6.2f} s", flush=True)
        last = now

    record = RecordReader(run)
    spark = session.session(plan=memory.plan([record.location]))
    took("session")
    faults = clock_alignment.as_acted(record.faults())
    ledgers = {kind: load(spark, record, kind, None, ()) for kind in ("produced", "audit", "consumed")}
    (P, _), (A, _), (C, _) = ledgers.values()
    took("ledgers (schemas)")
    plain = {kind: info["plain"] for kind, (_, info) in ledgers.items()}
    where = {kind: info["where"] for kind, (_, info) in ledgers.items()}
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    scanned = identities.scan(P, A, C, partitions, faults, plain, where)
    scr = identities.screen(scanned)
    took(f"scan and screen ({scr.totals['suspicious']:,} buckets to look at)")
    checker.producer_pass(scanned)
    took("producer tables")
    unordered = len(scanned.reordering().unordered())
    checker.reordering(scanned, A)
    took(f"reordering ({unordered} groups sorted)")
    ident = identities.identity_pass(scanned, C, scr, faults)
    took(f"identity pass ({ident.totals['anomalous']:,} anomalous records)")
    checker.examples(P, A, ident, plain, where)
    took("the report's examples")
    scanned.release()
    print(f"  {'all':44s} {time.monotonic() - began:6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_process:
        sys.path.insert(0, str(ROOT))
        steps(args.runs[0])
        return
    for run in args.runs:
        print(run, flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--in-process", run], cwd=ROOT, stderr=subprocess.PIPE, text=True
        )
        if done.returncode:
            sys.exit(f"{run}: exit {done.returncode}: {done.stderr[-2000:]}")


if __name__ == "__main__":
    main()
