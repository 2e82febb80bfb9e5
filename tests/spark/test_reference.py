"""`dcdrill verify` against the plain reference checker (spark/reference.py) on random drill
records: every count of RECORD.md and the latencies by DC (also by phase) and by partition, on
records with random loss, duplicates, reordering, divergence, phantoms, torn lines and failed and
indeterminate sends, laid out producer after producer or (issue 71) interleaved as a drill writes
them, with up to about 5 % of each kind."""

import json
import subprocess
import sys

from dcdrill.spark import reference
from tests.records import random_record

RECORDS = 8  # every count is non-zero by the fifth seed (tested below); more records only cost CI time
INTERLEAVED = 5  # drill-shaped records (issue 71): seed 4 loses over 2 % of what it acknowledged


def test_every_count_equals_the_reference_on_random_records(tmp_path):
    runs = [random_record(tmp_path / f"r{seed:03d}", seed) for seed in range(RECORDS)]
    runs += [random_record(tmp_path / f"i{seed:03d}", seed, interleaved=True) for seed in range(INTERLEAVED)]
    # One `dcdrill verify` for all of them: one Spark session, as a user re-verifying a folder would.
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", *map(str, runs), "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert res.returncode in (0, 1), res.stderr[-3000:]
    # Quiet means quiet: no JVM start-up warnings, no Spark log lines, no traceback at the JVM's end.
    assert res.stderr == "", res.stderr[-3000:]
    summaries = json.loads(res.stdout)
    assert len(summaries) == len(runs)
    wrong = []
    for run, summary in zip(runs, summaries):
        want = reference.counts(run)
        got = {k: summary["counts"][k] for k in want}
        if got != want:
            wrong.append((run.name, {k: (got[k], want[k]) for k in want if got[k] != want[k]}))
        want = reference.latencies(run)  # the DC and partition tables' latency columns
        got = {
            "by_dc": {
                r["dc"]: [r["latency_p50_ms"], r["latency_p99_ms"]]
                for r in summary["by_dc"]
                if r["latency_p50_ms"] is not None
            },
            "by_dc_phase": {
                (r["dc"], r["phase"]): [r["latency_p50_ms"], r["latency_p99_ms"]]
                for r in summary["by_dc_phase"]
                if r["latency_p50_ms"] is not None
            },
            "by_partition": {
                (r["topic"], r["partition"]): [r["latency_p50_ms"], r["latency_p99_ms"]]
                for r in summary["by_partition"]
                if r["latency_p50_ms"] is not None
            },
        }
        if got != want:
            wrong.append((run.name, "latency", got, want))
    assert not wrong, wrong[:5]
    # The records are not all clean: every count is non-zero somewhere.
    totals = {k: sum(s["counts"][k] for s in summaries) for k in summaries[0]["counts"]}
    assert all(totals[k] > 0 for k in totals), totals
    # The drill-shaped ones interleave their producers and go wrong often, across many buckets.
    heavy = summaries[RECORDS:]
    assert all(s["counts"]["produced"] > 3 * 64 for s in heavy)
    assert max(s["counts"]["acked_lost"] / s["counts"]["produced"] for s in heavy) > 0.02, [s["counts"] for s in heavy]
    assert all(
        sum(s["counts"][k] > 0 for k in ("acked_lost", "duplicates_in_log", "reordered", "phantoms")) == 4
        for s in heavy
    ), [s["counts"] for s in heavy]
