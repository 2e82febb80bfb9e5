"""Produce latency on the lab, predicted beside measured, for acks=1 and acks=all at several
one-way inter-DC delays (the README's table), in one run on one lab.

    .venv/bin/python tests/benchmarks/latency_table.py [--stack local] [--delays 0 5 20 50] [--rate 20]

Needs the lab up (`make lab`). For each delay, every DC pair is set to it (infra/lab/shaper.py);
for each acks, one producer per client DC writes `--rate` records/s for `--seconds`, and the
latency (ack_ms - send_ms) of what was acknowledged after the warm-up is read from the ledgers.
The prediction is infra/rules.produce_latency's range over the routes (producer DC -> leader DC).
The load is light on purpose: at the default drill load this machine's CPUs, not the network,
set the latency (tests/benchmarks/quiet_lab.py). The stack's own shapes are put back at the end.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dcdrill.infra import lifecycle, rules, stack
from dcdrill.infra.constants import state_dir
from dcdrill.infra.lab import layout, shaper
from dcdrill.record.ledger import read
from dcdrill.validation import workload as wl

TOPICS: list[str] = []


def measure(inv, acks: str, rate: float, seconds: float, warmup: float, client: str) -> tuple[int, int, int]:
    dcs = sorted({h.dc for h in inv.clients})
    spec = wl.WorkloadSpec(
        topic=f"dcdrill-latency-{acks}-{int(time.time())}",
        producers=len(dcs),
        consumers=0,
        rate=rate,
        duration_s=seconds,
        acks=acks,
        hosts=dcs,
        client=client,
    )
    wl.ensure_topic(inv, spec)
    run = Path(tempfile.mkdtemp(prefix="dcdrill-latency-"))
    w = wl.Workload(run, inv, spec).start()
    w.wait_producers(progress=False)
    w.stop()
    rows = [r for f in (run / "produced").glob("*.jsonl") for r in read(f)[0]]
    start = min(r["send_ms"] for r in rows) + warmup * 1000
    lat = sorted(r["ack_ms"] - r["send_ms"] for r in rows if r["status"] == "ok" and r["send_ms"] >= start)
    TOPICS.append(spec.topic)  # deleted at the end: a deletion's fetch errors would touch the next run
    return lat[len(lat) // 2], lat[max(0, int(len(lat) * 0.99 + 0.999999) - 1)], len(lat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--delays", type=float, nargs="+", default=[0, 5, 20, 50], help="one-way ms")
    ap.add_argument("--rate", type=float, default=20.0, help="records/s per producer (one per client DC)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--client", choices=["kafka-python", "confluent"], default="kafka-python")
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    t = stack.load(args.stack)
    links = shaper.installed(layout.shaper_dir(state_dir()))
    configured = links.current()
    rows = []
    try:
        for delay in args.delays:
            links.apply({pair: shaper.LinkShape(delay) for pair in configured})
            predicted = rules.produce_latency(t, {(a, b): delay for a in t.dc_names for b in t.dc_names if a != b})
            for acks in ("1", "all"):
                p50, p99, n = measure(inv, acks, args.rate, args.seconds, args.warmup, args.client)
                lo, hi = predicted["range_ms"][acks]
                rows.append((delay, acks, lo, hi, p50, p99, n))
                print(
                    f"one-way {delay:g} ms, acks={acks}: predicted {lo:g}-{hi:g} ms, measured p50 {p50} p99 {p99} "
                    f"({n} records)",
                    flush=True,
                )
    finally:
        links.apply(configured)
        for topic in TOPICS:
            wl.delete_topic(inv, topic)
    print("\n| one-way delay | acks | predicted (network) | measured p50 | measured p99 |")
    print("| --- | --- | --- | --- | --- |")
    for delay, acks, lo, hi, p50, p99, _ in rows:
        print(f"| {delay:g} ms | {acks} | {lo:g} to {hi:g} ms | {p50} ms | {p99} ms |")


if __name__ == "__main__":
    main()
