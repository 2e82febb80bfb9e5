"""dcdrill's sequenced producer (full per-record ledger) vs Kafka's own ProducerPerformance,
same lab, same client namespace, same topic settings, acks=all, 100-byte records, one run.

    .venv/bin/python tests/benchmarks/workload_vs_perftest.py [--records 200000] [--stack local]

Needs the lab up (`make lab`). Prints records/s of each and the ratio.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infra import lifecycle
from infra import stack as stacks
from infra.inventory import bootstrap_servers
from validation import workload as wl
from validation.ledger import read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--records", type=int, default=200_000)
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    client = sorted(inv["all"]["children"]["client"]["hosts"].values(), key=lambda h: h["dc"])[0]
    boot = ",".join(bootstrap_servers(inv))
    results = {}

    topic = f"bench-perf-{int(time.time())}"
    wl.ensure_topic(inv, wl.WorkloadSpec(topic=topic))
    libs = stacks.cache_dir() / "kafka" / "libs"
    t0 = time.monotonic()
    out = subprocess.run(["ip", "netns", "exec", client["netns"], "java", "-Xmx512m", "-cp", f"{libs}/*",
                          "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                          "--num-records", str(args.records), "--record-size", "100", "--throughput", "-1",
                          "--producer-props", f"bootstrap.servers={boot}", "acks=all", "linger.ms=5"],
                         capture_output=True, text=True, check=True).stdout
    wall = time.monotonic() - t0
    m = re.findall(r"([\d.]+) records/sec", out)
    results["ProducerPerformance"] = float(m[-1])
    print(f"ProducerPerformance: {results['ProducerPerformance']:.0f} records/s (its own figure; wall {wall:.1f}s)")

    topic = f"bench-dcdrill-{int(time.time())}"
    spec = wl.WorkloadSpec(topic=topic, producers=1, consumers=0, rate=None, duration_s=None, count=args.records,
                           record_size=100, acks="all", linger_ms=5, hosts=[client["dc"]])
    wl.ensure_topic(inv, spec)
    run = Path(tempfile.mkdtemp(prefix="dcdrill-bench-"))
    w = wl.Workload(run, inv, spec).start()
    w.wait_producers(progress=False)
    w.stop()
    rows, _ = read(run / "produced" / "p1.jsonl")
    ok = [r for r in rows if r["status"] == "ok"]
    span = (max(r["ack_ms"] for r in ok) - min(r["send_ms"] for r in rows)) / 1000
    results["dcdrill"] = len(ok) / span
    print(f"dcdrill producer (kafka-python, ledger of {len(rows)} rows): {results['dcdrill']:.0f} records/s "
          f"(first send to last ack)")
    print(f"ratio dcdrill / ProducerPerformance = {results['dcdrill'] / results['ProducerPerformance']:.2f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
