"""The verifier's command-line options: `dcdrill verify` and `spark-submit
dcdrill/verify_command.py` parse the same ones (dcdrill/verify_command.py)."""

from __future__ import annotations

import argparse


def conf_pair(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    return key, value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="a drill record directory (runs/<id>, another local path, or s3a://...); several are "
        "verified one after another in one Spark session, the first in a fresh JVM and the "
        "others in a warm one (so re-verifying a folder of old records is quick)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print summary.json instead of the one-screen summary (a JSON list for several records)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        type=conf_pair,
        metavar="KEY=VALUE",
        help="a Spark setting, as with spark-submit (repeat it); for s3a:// records the "
        "spark.hadoop.fs.s3a.* endpoint and credentials",
    )
