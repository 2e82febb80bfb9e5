"""`dcdrill verify RUN_DIR...`: the verifier in-process (local[*] unless DCDRILL_SPARK_MASTER is set).
`dcdrill history [RUNS ...]`: repeated drills side by side, from their reports (spark/history.py).

The same file is spark-submit's entry, for a Spark cluster of the user's:
    spark-submit --jars <the kernel jar> dcdrill/verify_command.py RUN_DIR...
Importing this module costs nothing: the options are spark/options.py's, Spark is imported by run().
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: the package's parent is importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dcdrill.exits import EXIT_BAD_INPUT, verdict_code  # noqa: E402
from dcdrill.spark.options import add_arguments  # noqa: E402

COMMANDS = ("verify", "history")
VERIFY_HELP = (
    "Counts loss, duplication, reordering and divergence in a drill record, splits them by fault "
    "phase, and gives a verdict against the topology."
)
VERIFY_EPILOG = "Exit 0 = verdict pass, 1 = verdict fail, 2 = bad input; with several records, the worst of theirs."


def register(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="verify a drill record with Spark and write its report",
        description=VERIFY_HELP + " Same code as `spark-submit dcdrill/verify_command.py RUN_DIR`.",
        epilog=VERIFY_EPILOG,
    )
    add_arguments(p)
    p.set_defaults(func=run)
    h = sub.add_parser(
        "history",
        help="repeated drills side by side: pass rate, loss, recovery spread",
        description="Groups verified drill records by the topology's promise and the faults "
        "injected, and shows per group how many passed, how many lost "
        "acknowledged records, and the recovery time and longest acknowledgement "
        "gap as min / median / max. Reads each record's report/summary.json.",
        epilog="Exit 0 = summarised, 2 = nothing to summarise or an unreadable summary.",
    )
    h.add_argument("runs", nargs="*", default=["runs"], help="runs folders or drill records (default: runs)")
    h.add_argument("--json", action="store_true", help="print the groups as JSON")
    h.add_argument("--html", metavar="FILE", help="also write a self-contained page with each drill as a dot")
    h.set_defaults(func=_history)


def run(args: argparse.Namespace) -> int:
    """Verify each record, print its one-screen summary (or --json), return the worst exit code.
    A record with bad input is reported and the others are still verified."""
    import json
    import logging

    from dcdrill.record import RecordReader
    from dcdrill.record.contents import REPORT
    from dcdrill.spark import memory, report_files, session, verify

    codes, summaries = [], []
    plan = memory.plan(args.run_dirs)
    conf = dict(args.conf)
    heap = session.heap_given(conf, plan)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # a dead JVM is reported below, in one line
    own = getattr(args, "own_process", False)
    with session.spark_scope(end_jvm=own):
        if any(d.startswith("s3a://") for d in args.run_dirs):  # one session serves every record:
            try:  # with the s3a jars if one needs them
                session.session(conf=conf, s3a=True, plan=plan)
            except verify.BadInput as exc:
                print(f"verify: bad input: {exc}", file=sys.stderr)
                return EXIT_BAD_INPUT
        for n, run_dir in enumerate(args.run_dirs, 1):
            if len(args.run_dirs) > 1 and not args.quiet:
                print(f"verify: {run_dir}", file=sys.stderr, flush=True)
            try:
                if session.jvm_ended():  # an earlier record's JVM ran out of memory: this one gets a new one
                    code, summary = _in_a_new_process(run_dir, args)
                    if summary is None:
                        codes.append(code)
                        continue
                else:
                    # The last record's JVM may end while its report is drawn: this process exits next.
                    last = own and n == len(args.run_dirs)
                    summary = verify.verify(
                        run_dir,
                        quiet=args.quiet,
                        conf=conf,
                        plan=plan,
                        when_spark_done=session.begin_ending_jvm if last else None,
                    )
            except verify.BadInput as exc:
                print(f"verify: bad input: {exc}", file=sys.stderr)
                codes.append(EXIT_BAD_INPUT)
                continue
            except Exception as exc:  # noqa: BLE001 - one record's failure is that record's, not the call's
                # Exit 1 would read as a verdict. Anything unforeseen in a record is bad input for
                # that record, named; the other records of the call are still verified. Running
                # out of memory names the setting to raise.
                print(
                    f"verify: bad input: {run_dir}: {memory.failure(exc, heap, session.jvm_process())}", file=sys.stderr
                )
                codes.append(EXIT_BAD_INPUT)
                continue
            codes.append(verdict_code(summary))
            summaries.append(summary)
            if not args.json:
                print(report_files.one_screen(summary))
                print(f"report: {RecordReader(run_dir).uri(REPORT, 'index.html')}")
    if args.json and summaries:
        print(json.dumps(summaries[0] if len(args.run_dirs) == 1 else summaries, indent=2, default=str))
    return max(codes)


def _in_a_new_process(run_dir: str, args) -> tuple[int, dict | None]:
    """One record verified by a `dcdrill verify` of its own (a JVM is launched once per process):
    its exit code and summary (None when it had none; its errors went to stderr)."""
    import json
    import subprocess

    argv = [
        sys.executable,
        "-m",
        "dcdrill.cli",
        "verify",
        run_dir,
        "--json",
        *(["--quiet"] if args.quiet else []),
        *[x for k, v in args.conf for x in ("--conf", f"{k}={v}")],
    ]
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    if done.returncode >= EXIT_BAD_INPUT or not done.stdout.strip():
        return done.returncode, None
    return done.returncode, json.loads(done.stdout)


def _history(args) -> int:
    import json

    from dcdrill.spark import history

    summaries = history.load(args.runs)  # BadHistory is a ValueError: dcdrill exits 2 naming it
    groups = history.groups(summaries)
    print(json.dumps(groups, indent=2) if args.json else history.render_text(groups))
    if args.html:
        with open(args.html, "w") as f:
            f.write(history.render_html(groups, summaries))
        print(f"history: {args.html}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """spark-submit's entry: the options of `dcdrill verify`."""
    p = argparse.ArgumentParser(
        prog="spark-submit dcdrill/verify_command.py", description=VERIFY_HELP, epilog=VERIFY_EPILOG
    )
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
