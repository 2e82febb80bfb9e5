"""A cold Kafka broker's CPU, with and without a class-data archive: to its first listener, then
under a fixed load, for each JVM setting, alternating, in one run.

    .venv/bin/python tests/benchmarks/broker_start.py [--folder kafka4] [--rounds 2] [--records 150000]
                                                      [--jdk25 /usr/lib/jvm/temurin-25-jdk-amd64]

One broker (KRaft, broker and controller in one JVM, plaintext, on loopback) with the lab's
options (serial GC, both JIT tiers), started cold each time. Settings:
  * jdk17:          the machine's `java`, as the lab runs it without an archive;
  * jdk17+archive:  the same with the archive setup trained (infra/java_archive.py);
  * jdk25:          the given JDK 25, no cache;
  * jdk25+aot:      JDK 25's AOT cache (JEP 483 and 515: classes loaded and linked, and method
                    profiles), trained here first by one broker serving the same load.
Prints, per setting, the medians of the broker's CPU seconds to its first listener and during
the load (ProducerPerformance at 10,000 records/s, acks=1, on the machine's `java`), and each as
a ratio to jdk17's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dcdrill.infra import java_archive
from dcdrill.infra.constants import cache_dir

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(java: str, options: list[str], libs: Path, tmp: Path) -> tuple[subprocess.Popen, float, int]:
    """A formatted broker started cold; returns it, its CPU seconds when its port opened, its port."""
    shutil.rmtree(tmp / "data", ignore_errors=True)
    port, controller = java_archive.free_port(), java_archive.free_port()
    props = java_archive.write_properties(
        tmp / "server.properties",
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(tmp / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        },
    )
    subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{libs}/*",
            "kafka.tools.StorageTool",
            "format",
            "-t",
            "dcdrill-broker-start00",
            "-c",
            str(props),
        ],
        check=True,
        capture_output=True,
    )
    out = open(tmp / "broker.out", "wb")
    proc = subprocess.Popen(
        [
            java,
            "-Xms384m",
            "-Xmx384m",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            *options,
            "-cp",
            f"{libs}/*",
            "kafka.Kafka",
            str(props),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=tmp,
    )
    java_archive.wait_port(port, proc)
    return proc, cpu_s(proc.pid), port


def load(port: int, libs: Path, records: int) -> None:
    subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{libs}/*",
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            "bench",
            "--num-records",
            str(records),
            "--record-size",
            "100",
            "--throughput",
            "10000",
            "--producer-props",
            f"bootstrap.servers=127.0.0.1:{port}",
            "acks=1",
            "linger.ms=5",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def measure(java: str, options: list[str], libs: Path, records: int, tmp: Path) -> tuple[float, float]:
    proc, started, port = start(java, options, libs, tmp)
    try:
        load(port, libs, records)
        return started, cpu_s(proc.pid) - started
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default="kafka4", help="a Kafka version's cache folder (kafka: 3.9, kafka4: 4.x)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--records", type=int, default=150_000)
    ap.add_argument("--jdk25", default="/usr/lib/jvm/temurin-25-jdk-amd64", help="a JDK 25 home (skipped if absent)")
    a = ap.parse_args()
    libs = cache_dir() / a.folder / "libs"
    archive = java_archive.trained(libs)
    if archive is None:
        sys.exit(f"no trained archive for {libs}: run make setup")
    java17 = java_archive.java_binary()
    java25 = str(Path(a.jdk25) / "bin" / "java")
    settings = {"jdk17": (java17, []), "jdk17+archive": (java17, [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off"])}
    with tempfile.TemporaryDirectory(prefix="dcdrill-broker-start-") as tmp_name:
        tmp = Path(tmp_name)
        if Path(java25).exists():
            aot = tmp / "broker.aot"
            settings["jdk25"] = (java25, [])
            t0 = time.monotonic()
            measure(java25, [f"-XX:AOTCacheOutput={aot}"], libs, a.records, tmp)  # the training run
            print(f"jdk25 AOT cache trained in {time.monotonic() - t0:.0f} s ({aot.stat().st_size >> 20} MiB)")
            settings["jdk25+aot"] = (java25, [f"-XX:AOTCache={aot}"])
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}
        for r in range(a.rounds):
            for name, (java, options) in settings.items():
                results[name].append(measure(java, options, libs, a.records, tmp))
                print(
                    f"round {r + 1} {name}: to first listener {results[name][-1][0]:.2f} s CPU, "
                    f"under load {results[name][-1][1]:.2f} s CPU",
                    flush=True,
                )
    base = [statistics.median(x[i] for x in results["jdk17"]) for i in (0, 1)]
    print(f"\nmedians of {a.rounds} ({a.folder}, {a.records} records at 10,000/s):")
    for name, rows in results.items():
        started, loaded = (statistics.median(x[i] for x in rows) for i in (0, 1))
        print(
            f"  {name:<14} first listener {started:5.2f} s CPU ({started / base[0]:.2f}x)   "
            f"load {loaded:5.2f} s CPU ({loaded / base[1]:.2f}x)"
        )


if __name__ == "__main__":
    main()
