"""`dcdrill verify RUN_DIR`: the verifier in-process (local[*] unless DCDRILL_SPARK_MASTER is set)."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("verify", help="verify a drill record with Spark and write its report",
                       description="Counts loss, duplication, reordering and divergence in a drill record, "
                                   "splits them by fault phase, and gives a verdict against the topology. "
                                   "Same code as `spark-submit spark/verify.py RUN_DIR`.")
    p.add_argument("run_dir", help="the drill record directory (runs/<id>, or s3a://...)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the one-screen summary")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as with spark-submit (repeat it); for s3a:// records the "
                        "spark.hadoop.fs.s3a.* endpoint and credentials")
    p.set_defaults(func=lambda a: _run(a))


def _run(args) -> int:
    from spark import verify
    return verify.main([args.run_dir] + (["--json"] if args.json else []) + (["--quiet"] if args.quiet else [])
                       + [x for c in args.conf for x in ("--conf", c)])
