"""Lab bring-up time and peak memory, from nothing to healthy, then the teardown time.

    .venv/bin/python tests/benchmarks/lab_bringup.py [--stack local [--stack local-kraft ...]]
        [--strategy linear --strategy mitogen_linear] [--class-archive off --class-archive on] [--keep]

Samples the machine's used memory and the JVMs' summed RSS every 0.5 s while `dcdrill lab up`
runs; prints bring-up seconds, peak JVM RSS, and the machine's peak used memory over its baseline.
Several stacks are measured one after the other in the same run (one lab at a time), each
bring-up also as a ratio to the first stack's. With --strategy, each stack is brought up once per
Ansible strategy (DCDRILL_ANSIBLE_STRATEGY), and a second `lab up` (a re-converge that changes
nothing) is timed too; both as ratios to the first strategy's. --class-archive does the same for
the Kafka JVMs' class-data archive (DCDRILL_CLASS_ARCHIVE, infra/java_archive.py), and prints the
JVMs' own CPU seconds (brokers, ZooKeeper) once the lab is healthy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time


def used_mib() -> float:
    info = dict(line.split(":") for line in open("/proc/meminfo"))
    kib = lambda k: int(info[k].strip().split()[0])  # noqa: E731
    return (kib("MemTotal") - kib("MemAvailable")) / 1024


def jvm_rss_mib() -> float:
    out = subprocess.run(["ps", "-eo", "rss,args"], capture_output=True, text=True).stdout
    jvms = [line for line in out.splitlines()[1:] if "kafka.Kafka" in line or "QuorumPeerMain" in line]
    return sum(int(line.split()[0]) for line in jvms) / 1024


def jvm_cpu_s() -> float:
    """User + system seconds of the running brokers, controllers and ZooKeeper nodes."""
    pids = subprocess.run(
        ["pgrep", "-f", "kafka[.]Kafka|QuorumPeerMain"], capture_output=True, text=True
    ).stdout.split()
    ticks = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", action="append", help="a lab stack (repeat for several; default local)")
    ap.add_argument(
        "--strategy",
        action="append",
        help="an Ansible strategy (repeat to compare; default: dcdrill's, mitogen_linear)",
    )
    ap.add_argument(
        "--class-archive",
        action="append",
        choices=["on", "off"],
        help="with or without the Kafka JVMs' class-data archive (repeat to compare)",
    )
    ap.add_argument("--keep", action="store_true", help="leave the last lab up")
    args = ap.parse_args()
    stacks = args.stack or ["local"]
    if args.strategy and args.class_archive:
        ap.error("compare --strategy or --class-archive, not both")
    variants = (
        [("DCDRILL_ANSIBLE_STRATEGY", s) for s in args.strategy or []]
        or [("DCDRILL_CLASS_ARCHIVE", c) for c in args.class_archive or []]
        or [(None, None)]
    )
    first = None
    for n, name in enumerate(stacks):
        per_variant = []
        for k, (var, value) in enumerate(variants):
            if var:
                os.environ[var] = value
                print(f"== {var}={value}")
            last = n == len(stacks) - 1 and k == len(variants) - 1
            per_variant.append(measure(name, keep=args.keep and last, again=bool(var)))
            if k:
                (up0, again0), (up, again) = per_variant[0], per_variant[k]
                print(
                    f"{value} / {variants[0][1]} on {name}: bring-up {up / up0:.2f}x, re-converge {again / again0:.2f}x"
                )
        up_s = per_variant[0][0]
        first = first or up_s
        if n:
            print(f"bring-up {name} / {stacks[0]}: {up_s / first:.2f}x")


def measure(stack: str, keep: bool, again: bool) -> tuple[float, float | None]:
    cli = [sys.executable, "-m", "dcdrill.cli"]
    subprocess.run(cli + ["lab", "down", "--stack", stack], capture_output=True)
    base = used_mib()
    peak = {"used": base, "jvm": 0.0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak["used"] = max(peak["used"], used_mib())
            peak["jvm"] = max(peak["jvm"], jvm_rss_mib())
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    t0 = time.monotonic()
    subprocess.run(cli + ["lab", "up", "--stack", stack, "--quiet"], check=True, capture_output=True)
    up_s = time.monotonic() - t0
    time.sleep(2)
    done.set()
    print(
        f"stack {stack}: bring-up {up_s:.1f}s (pulumi up + Ansible + healthy); the JVMs' CPU so far {jvm_cpu_s():.1f}s"
    )
    print(
        f"peak JVM RSS {peak['jvm']:.0f} MiB; machine used memory peak {peak['used']:.0f} MiB "
        f"(baseline {base:.0f} MiB, +{peak['used'] - base:.0f} MiB) of {used_mib() + 0:.0f} now"
    )
    again_s = None
    if again:
        t0 = time.monotonic()
        subprocess.run(cli + ["lab", "up", "--stack", stack, "--quiet"], check=True, capture_output=True)
        again_s = time.monotonic() - t0
        print(f"stack {stack}: a second lab up (nothing to change) {again_s:.1f}s")
    if not keep:
        t0 = time.monotonic()
        subprocess.run(cli + ["lab", "down", "--stack", stack], check=True, capture_output=True)
        print(f"teardown {time.monotonic() - t0:.1f}s")
    return up_s, again_s


if __name__ == "__main__":
    main()
