"""What fsyncing every write costs: produce latency and machine idle at the default drill load
(3 producers x 200 records/s, 2 consumers, acks=all), with and without `flush.messages=1` on the
topic (`dcdrill drill --flush-each-write`, the control of a power loss), side by side on one lab.

    .venv/bin/python tests/benchmarks/flush_cost.py [--stack local] [--rounds 2] [--seconds 40]
                                                    [--warmup 10] [--warm-load 120]

Needs the lab up (`make lab`). The links carry no added delay while it runs (as quiet_lab.py), and
the lab is first loaded for --warm-load seconds unmeasured: a cold broker's compiles would
otherwise be measured, not the fsync. Then the two settings alternate, --rounds times each, each
on a topic of its own made with the cluster's factor and min.insync (and flush.messages=1 or
not): latency is ack_ms - send_ms of the records sent after the run's first --warmup seconds.
On `local-power-loss` the fsyncs go through the lab's FUSE disks, which keep what a power cut
would (docs/lab.md); on `local` they reach the machine's own filesystem.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quiet_lab import load_arguments, measure, print_table, warm  # noqa: E402 - a sibling module

from dcdrill.infra import lifecycle, stack  # noqa: E402
from dcdrill.infra.constants import state_dir  # noqa: E402
from dcdrill.infra.lab import layout, shaper  # noqa: E402

SETTINGS = {"the OS flushes (Kafka's default)": False, "flush.messages=1 (fsync each write)": True}


def main() -> None:
    ap = load_arguments(__doc__.split("\n\n")[0], 120.0, "the start")
    ap.add_argument("--rounds", type=int, default=2, help="measured runs of each setting, alternating")
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    # The stack's own replication, as a drill's topic takes it, with or without the fsync per write.
    setting = {
        flush: {"spec": {}, "replication": replace(stack.load(args.stack).replication, flush_each_write=flush)}
        for flush in SETTINGS.values()
    }
    links = shaper.installed(layout.shaper_dir(state_dir()))
    configured = links.current()
    links.apply({pair: shaper.LinkShape() for pair in configured})  # no added delay
    results = []
    try:
        if args.warm_load > 0:
            warm(inv, setting[False], args.warm_load)
        for i in range(args.rounds):
            for name, flush in SETTINGS.items():
                results.append(measure(inv, f"{name}, run {i + 1}", setting[flush], args.seconds, args.warmup))
                print(json.dumps(results[-1]), flush=True)
    finally:
        links.apply(configured)
    print(
        f"\n{args.stack}, default drill load, {args.seconds:g} s each after {args.warm_load:g} s of load, "
        f"latency after a {args.warmup:g} s warm-up:"
    )
    print_table(results, 44)


if __name__ == "__main__":
    main()
