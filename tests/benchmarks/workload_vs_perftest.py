"""dcdrill's sequenced producer (full per-record ledger) vs Kafka's own ProducerPerformance,
same lab, same client namespace, same topic settings, acks=all, 100-byte records, one run.

    .venv/bin/python tests/benchmarks/workload_vs_perftest.py [--records 200000] [--stack local]

Needs the lab up (`make lab`). Prints records/s of each and the ratio. Each client runs at its
own defaults but for acks and linger.ms: ProducerPerformance's Java producer with batch.size
16384 (per partition, many partitions to a request), the workload's librdkafka with its
1000000 (one partition to a request). ProducerPerformance also runs with batch.size=1000000,
so that a reader sees what the Java producer does with batches as large.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from dcdrill.infra import lifecycle
from dcdrill.infra.constants import cache_dir
from dcdrill.record.ledger import read
from dcdrill.validation import clients
from dcdrill.validation import workload as wl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are reported")
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    client = sorted(inv.clients, key=lambda h: h.dc)[0]
    boot = ",".join(inv.bootstrap_servers())
    libs = cache_dir() / "kafka" / "libs"
    # TLS / SASL stacks: the Java producer gets the workload's user and CA, in a file (the password
    # stays off its command line); topics are dcdrill-*, which the workload user's ACLs allow.
    java_config = Path(tempfile.mkdtemp(prefix="dcdrill-bench-")) / "producer.properties"
    java_config.write_text("".join(f"{line}\n" for line in clients.java_properties(inv.client_security())))
    java_config.chmod(0o600)
    java_runs = {"ProducerPerformance": [], "ProducerPerformance batch.size=1000000": ["batch.size=1000000"]}
    runs: dict[str, list[float]] = {name: [] for name in [*java_runs, "kafka-python", "confluent"]}
    for rnd in range(args.rounds):
        for name, extra in java_runs.items():
            topic = f"dcdrill-bench-perf-{int(time.time())}-{rnd}"
            wl.ensure_topic(inv, wl.WorkloadSpec(topic=topic))
            out = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    client.netns,
                    "java",
                    "-Xmx512m",
                    "-cp",
                    f"{libs}/*",
                    "org.apache.kafka.tools.ProducerPerformance",
                    "--topic",
                    topic,
                    "--num-records",
                    str(args.records),
                    "--record-size",
                    "100",
                    "--throughput",
                    "-1",
                    "--producer-props",
                    f"bootstrap.servers={boot}",
                    "acks=all",
                    "linger.ms=5",
                    *extra,
                    "--producer.config",
                    str(java_config),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            runs[name].append(float(re.findall(r"([\d.]+) records/sec", out)[-1]))
            # Each round's topics go once measured: left behind, their replicas' fetches load the
            # brokers of every later round (and of whatever shares the lab next).
            wl.delete_topic(inv, topic)
        for backend in ("kafka-python", "confluent"):
            spec = wl.WorkloadSpec(
                topic=f"dcdrill-bench-{backend}-{int(time.time())}-{rnd}",
                producers=1,
                consumers=0,
                rate=None,
                duration_s=None,
                count=args.records,
                record_size=100,
                acks="all",
                linger_ms=5,
                hosts=[client.dc],
                client=backend,
            )
            wl.ensure_topic(inv, spec)
            run = Path(tempfile.mkdtemp(prefix="dcdrill-bench-"))
            w = wl.Workload(run, inv, spec).start()
            w.wait_producers(progress=False)
            w.stop()
            wl.delete_topic(inv, spec.topic)
            rows, _ = read(run / "produced" / "p1.jsonl")
            ok = [r for r in rows if r["status"] == "ok"]
            assert len(rows) == args.records, "every record has its ledger row"
            runs[backend].append(len(ok) / ((max(r["ack_ms"] for r in ok) - min(r["send_ms"] for r in rows)) / 1000))
        print(f"round {rnd + 1}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in runs.items()), flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(
        f"medians over {args.rounds} rounds, {args.records} records of 100 bytes, acks=all, "
        f"one producer in {client.dc}:"
    )
    print(f"  ProducerPerformance (Java, no ledger)   {med['ProducerPerformance']:9.0f} records/s")
    big = med["ProducerPerformance batch.size=1000000"]
    print(
        f"    the same, batch.size=1000000          {big:9.0f} records/s   ratio {big / med['ProducerPerformance']:.2f}"
    )
    for backend in ("kafka-python", "confluent"):
        print(
            f"  dcdrill {backend:<14} (full ledger)  {med[backend]:9.0f} records/s   "
            f"ratio {med[backend] / med['ProducerPerformance']:.2f} ({med[backend] / big:.2f} of the large batches)"
        )
    print(json.dumps(med))


if __name__ == "__main__":
    main()
