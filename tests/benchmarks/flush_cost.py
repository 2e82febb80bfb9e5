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
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quiet_lab import load_arguments, measure, print_table, warm  # noqa: E402 - a sibling module

from dcdrill.infra import lifecycle  # noqa: E402
from dcdrill.infra.constants import cache_dir  # noqa: E402
from dcdrill.infra.lab import layout, shaper  # noqa: E402
from dcdrill.infra.topology import Replication  # noqa: E402
from dcdrill.validation import workload as wl  # noqa: E402

SETTINGS = {"the OS flushes (Kafka's default)": False, "flush.messages=1 (fsync each write)": True}


def replication_of(inv, flush: bool) -> Replication:
    av = inv.vars
    return Replication(factor=av["kafka_replication_factor"], min_insync=av["kafka_min_insync_replicas"],
                       unclean_leader_election=bool(av["kafka_unclean_leader_election"]), flush_each_write=flush)


def start_load(inv, cfg: dict, seconds: float, name: str):
    """quiet_lab's load, on a topic made with this setting's flush.messages."""
    spec = wl.WorkloadSpec(topic=f"dcdrill-{name}-{int(time.time())}", duration_s=seconds)
    wl.ensure_topic(inv, spec, replication=replication_of(inv, cfg["flush"]))
    run = Path(tempfile.mkdtemp(prefix=f"dcdrill-{name}-"))
    return run, wl.Workload(run, inv, spec).start()


def main() -> None:
    ap = load_arguments(__doc__.split("\n\n")[0], 120.0, "the start")
    ap.add_argument("--rounds", type=int, default=2, help="measured runs of each setting, alternating")
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    links = shaper.installed(layout.shaper_dir(cache_dir()))
    configured = links.current()
    links.apply({pair: shaper.LinkShape() for pair in configured})  # no added delay
    results = []
    try:
        if args.warm_load > 0:
            warm(inv, {"flush": False}, args.warm_load, start_load)
        for i in range(args.rounds):
            for name, flush in SETTINGS.items():
                results.append(measure(inv, f"{name}, run {i + 1}", {"flush": flush}, args.seconds, args.warmup,
                                       start_load))
                print(json.dumps(results[-1]), flush=True)
    finally:
        links.apply(configured)
    print(f"\n{args.stack}, default drill load, {args.seconds:g} s each after {args.warm_load:g} s of load, "
          f"latency after a {args.warmup:g} s warm-up:")
    print_table(results, 44)


if __name__ == "__main__":
    main()
