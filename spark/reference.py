"""A plain reference for the checker's counts: RECORD.md's definitions, written as directly as
Python allows, over a drill record's JSON Lines ledgers. No Spark, no hashing, no buckets: slow,
and obviously right. tests/spark/test_reference.py checks `dcdrill verify` against it on random
records.

    python -m dcdrill.spark.reference RUN_DIR      prints the counts as JSON
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from dcdrill.record.ledger import read
from dcdrill.record.reader import RecordReader
from dcdrill.spark import clock_alignment


def _ledger(record: RecordReader, kind: str) -> tuple[list[dict], int]:
    """Every row of one ledger folder, and how many of its files end in a torn line."""
    rows, torn = [], 0
    for path in sorted(record.ledger_dir(kind).glob("*.jsonl")):
        file_rows, file_torn = read(path)
        rows += file_rows
        torn += file_torn
    return rows, torn


def identity(row: dict) -> tuple:
    return row["producer_id"], row["seq"]


def counts(run_dir: str | Path) -> dict:
    """RECORD.md's counts (report/summary.json -> counts) of one drill record."""
    record = RecordReader(run_dir)
    P, torn_p = _ledger(record, "produced")
    A, torn_a = _ledger(record, "audit")
    C, torn_c = _ledger(record, "consumed")
    status = {identity(r): r["status"] for r in P}
    in_audit, in_consumed = Counter(identity(r) for r in A), Counter(identity(r) for r in C)
    at = {(r["topic"], r["partition"], r["offset"]): identity(r) for r in A}  # one audit row per position
    ok = [r for r in P if r["status"] == "ok"]

    reordered = 0
    by_producer = defaultdict(list)
    for r in A:
        by_producer[(r["topic"], r["partition"], r["producer_id"])].append(r)
    for rows in by_producer.values():
        highest = None
        for r in sorted(rows, key=lambda r: r["offset"]):
            if highest is not None and r["seq"] < highest:
                reordered += 1
            highest = r["seq"] if highest is None else max(highest, r["seq"])

    acks = defaultdict(list)
    for r in ok:
        if r.get("ack_ms") is not None:
            acks[(r["topic"], r["partition"])].append(r["ack_ms"])
    max_gap = 0
    for times in acks.values():
        times.sort()
        max_gap = max([max_gap] + [b - a for a, b in zip(times, times[1:])])

    return {
        "produced": len(P),
        "acked": len(ok),
        "failed": sum(r["status"] == "fail" for r in P),
        "indeterminate": sum(r["status"] == "info" for r in P),
        "acked_lost": sum(identity(r) not in in_audit for r in ok),
        "acked_unseen": sum(identity(r) not in in_consumed for r in ok),
        "failed_present": sum(s == "fail" and i in in_audit for i, s in status.items()),
        "indeterminate_present": sum(s == "info" and i in in_audit for i, s in status.items()),
        "duplicates_in_log": sum(n - 1 for n in in_audit.values()),
        "duplicates_delivered": sum(n - 1 for n in in_consumed.values()),
        "phantoms": sum(identity(r) not in status for r in A),
        "ack_offset_mismatch": sum(
            identity(r) in in_audit and at.get((r["topic"], r["partition"], r["offset"])) != identity(r) for r in ok
        ),
        "divergent_offsets": len(
            {
                (r["topic"], r["partition"], r["offset"])
                for r in C
                if at.get((r["topic"], r["partition"], r["offset"])) != identity(r)
            }
        ),
        "reordered": reordered,
        "max_ack_gap_ms": max_gap,
        "torn_lines": torn_p + torn_a + torn_c,
    }


def latencies(run_dir: str | Path) -> dict:
    """The produce latency (ack_ms - send_ms of each acknowledged record) as nearest-rank
    [p50, p99], by producer DC, by producer DC and phase, and by (topic, partition): the summary's
    by_dc, by_dc_phase and by_partition latency columns."""
    P, _ = _ledger(RecordReader(run_dir), "produced")
    faults = clock_alignment.as_acted(RecordReader(run_dir).faults())
    shift = clock_alignment.alignment(RecordReader(run_dir).clocks())["shift_ms"]
    faults = clock_alignment.on_producer_clocks(faults, shift)  # as the verifier sets them

    def phase(send_ms: int) -> str:  # before the first fault, during one, or after it (to the next)
        label = "before" if faults else "no fault"
        for f in faults:
            name = f"{f['fault']} {f['target']}"
            if send_ms < f["start_ms"]:
                return label
            if f.get("end_ms") is None or send_ms < f["end_ms"]:
                return f"during {name}"
            label = f"after {name}"
        return label

    by: dict[str, dict] = {
        "by_dc": defaultdict(list),
        "by_dc_phase": defaultdict(list),
        "by_partition": defaultdict(list),
    }
    for r in P:
        if r["status"] == "ok" and r.get("ack_ms") is not None:
            by["by_dc"][r.get("dc")].append(r["ack_ms"] - r["send_ms"])
            by["by_dc_phase"][(r.get("dc"), phase(r["send_ms"]))].append(r["ack_ms"] - r["send_ms"])
            by["by_partition"][(r["topic"], r["partition"])].append(r["ack_ms"] - r["send_ms"])

    def nearest_rank(values: list[int], percent: int) -> int:  # the ceil(percent/100 * n)-th smallest
        return sorted(values)[max(1, -(-len(values) * percent // 100)) - 1]

    return {
        split: {key: [nearest_rank(v, 50), nearest_rank(v, 99)] for key, v in groups.items()}
        for split, groups in by.items()
    }


if __name__ == "__main__":
    print(json.dumps(counts(sys.argv[1]), indent=2))
