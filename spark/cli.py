"""`dcdrill verify RUN_DIR...`: the verifier in-process (local[*] unless DCDRILL_SPARK_MASTER is set).
`dcdrill history [RUNS ...]`: repeated drills side by side, from their reports (spark/history.py).

The options live in spark/options.py, where importing costs nothing: `spark-submit spark/verify.py`
parses the same ones (spark/verify.py main)."""
from __future__ import annotations

from spark.options import add_arguments


def register(sub) -> None:
    p = sub.add_parser("verify", help="verify a drill record with Spark and write its report",
                       description="Counts loss, duplication, reordering and divergence in a drill record, "
                                   "splits them by fault phase, and gives a verdict against the topology. "
                                   "Same code as `spark-submit spark/verify.py RUN_DIR`.",
                       epilog="Exit 0 = verdict pass, 1 = verdict fail, 2 = bad input; with several records, "
                              "the worst of theirs.")
    add_arguments(p)
    p.set_defaults(func=_run)
    h = sub.add_parser("history", help="repeated drills side by side: pass rate, loss, recovery spread",
                       description="Groups verified drill records by the topology's promise and the faults "
                                   "injected, and shows per group how many passed, how many lost "
                                   "acknowledged records, and the recovery time and longest acknowledgement "
                                   "gap as min / median / max. Reads each record's report/summary.json.",
                       epilog="Exit 0 = summarised, 2 = nothing to summarise or an unreadable summary.")
    h.add_argument("runs", nargs="*", default=["runs"], help="runs folders or drill records (default: runs)")
    h.add_argument("--json", action="store_true", help="print the groups as JSON")
    h.add_argument("--html", metavar="FILE", help="also write a self-contained page with each drill as a dot")
    h.set_defaults(func=_history)


def _run(args) -> int:
    from spark import verify
    return verify.run(args)


def _history(args) -> int:
    import json
    import sys

    from spark import history
    summaries = history.load(args.runs)  # BadHistory is a ValueError: dcdrill exits 2 naming it
    groups = history.groups(summaries)
    print(json.dumps(groups, indent=2) if args.json else history.render_text(groups))
    if args.html:
        with open(args.html, "w") as f:
            f.write(history.render_html(groups, summaries))
        print(f"history: {args.html}", file=sys.stderr)
    return 0
