"""Is a lab quiet from its first drill? A fresh bring-up, then the default drill load at once:
produce latency and machine idle, for each warm-up given (0: none, as `make drill` does today),
each on a lab of its own brought up from nothing, one after the other in one run.

    .venv/bin/python tests/benchmarks/cold_lab.py [--stack local] [--warm 0 --warm 30] [--seconds 40]
                                                  [--warmup 10]

A warm-up of W seconds is the workload at full speed (3 producers, no rate limit, acks=all) right
after `lab up`, unmeasured: the brokers' hot paths (TLS, produce, fetch, replication) reach the
JIT's thresholds in seconds instead of minutes. Then the default drill load (quiet_lab.py's
measure: latency after --warmup seconds, idle over the same window), with no added delay
between DCs. Goal (issue: a lab quiet from its first drill): p50 <= 10 ms, p99 <= 50 ms,
idle >= 40 %. Leaves the last lab up.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quiet_lab import measure, print_table, start_load  # noqa: E402

from dcdrill.infra import lifecycle  # noqa: E402
from dcdrill.infra.constants import state_dir  # noqa: E402
from dcdrill.infra.lab import layout, shaper  # noqa: E402

DCDRILL = str(Path(sys.executable).parent / "dcdrill")


def fresh_lab(stack: str) -> float:
    """`lab down` then `lab up`: the seconds `lab up` took."""
    subprocess.run([DCDRILL, "lab", "down", "--stack", stack], check=True, capture_output=True)
    t0 = time.monotonic()
    subprocess.run([DCDRILL, "lab", "up", "--stack", stack], check=True, capture_output=True)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--warm", type=float, action="append", help="seconds of full-speed load after lab up (repeatable)")
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of the measured run not counted")
    args = ap.parse_args()
    results = []
    for warm_s in args.warm or [0.0]:
        up_s = fresh_lab(args.stack)
        inv = lifecycle.inventory(args.stack)
        links = shaper.installed(layout.shaper_dir(state_dir()))
        configured = links.current()
        links.apply({pair: shaper.LinkShape() for pair in configured})  # no added delay
        try:
            t0 = time.monotonic()
            if warm_s > 0:
                _, w = start_load(inv, {"spec": {"rate": None}}, warm_s, "cold-warm")
                w.wait_producers(progress=False)
                w.stop()
            warmed_s = time.monotonic() - t0
            r = measure(
                inv,
                f"lab up {up_s:.0f} s, then {warm_s:g} s full speed ({warmed_s:.0f} s)",
                {"spec": {}},
                args.seconds,
                args.warmup,
            )
        finally:
            links.apply(configured)
        results.append(r)
        print(json.dumps(r), flush=True)
    print(
        f"\ndefault drill load right after a fresh lab up (and the warm-up), {args.seconds:g} s, latency after "
        f"a {args.warmup:g} s warm-up:"
    )
    print_table(results, 44)
    print("  goal: p50 <= 10 ms, p99 <= 50 ms, idle >= 40 %")


if __name__ == "__main__":
    main()
