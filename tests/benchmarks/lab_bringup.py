"""Lab bring-up time and peak memory, from nothing to healthy, then the teardown time.

    .venv/bin/python tests/benchmarks/lab_bringup.py [--stack local [--stack local-kraft ...]]
        [--strategy linear --strategy mitogen_linear] [--keep]

Samples the machine's used memory and the JVMs' summed RSS every 0.5 s while `dcdrill lab up`
runs; prints bring-up seconds, peak JVM RSS, and the machine's peak used memory over its baseline.
Several stacks are measured one after the other in the same run (one lab at a time), each
bring-up also as a ratio to the first stack's. With --strategy, each stack is brought up once per
Ansible strategy (DCDRILL_ANSIBLE_STRATEGY), and a second `lab up` (a re-converge that changes
nothing) is timed too; both as ratios to the first strategy's.
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
    return sum(int(l.split()[0]) for l in out.splitlines()[1:]
               if "kafka.Kafka" in l or "QuorumPeerMain" in l) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", action="append", help="a lab stack (repeat for several; default local)")
    ap.add_argument("--strategy", action="append",
                    help="an Ansible strategy (repeat to compare; default: dcdrill's, mitogen_linear)")
    ap.add_argument("--keep", action="store_true", help="leave the last lab up")
    args = ap.parse_args()
    stacks = args.stack or ["local"]
    strategies = args.strategy or [None]
    first = None
    for n, name in enumerate(stacks):
        per_strategy = []
        for k, strategy in enumerate(strategies):
            if strategy:
                os.environ["DCDRILL_ANSIBLE_STRATEGY"] = strategy
                print(f"== Ansible strategy {strategy}")
            last = n == len(stacks) - 1 and k == len(strategies) - 1
            per_strategy.append(measure(name, keep=args.keep and last, again=bool(strategy)))
            if k:
                (up0, again0), (up, again) = per_strategy[0], per_strategy[k]
                print(f"{strategy} / {strategies[0]} on {name}: bring-up {up / up0:.2f}x, "
                      f"re-converge {again / again0:.2f}x")
        up_s = per_strategy[0][0]
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
    print(f"stack {stack}: bring-up {up_s:.1f}s (pulumi up + Ansible + healthy)")
    print(f"peak JVM RSS {peak['jvm']:.0f} MiB; machine used memory peak {peak['used']:.0f} MiB "
          f"(baseline {base:.0f} MiB, +{peak['used'] - base:.0f} MiB) of {used_mib() + 0:.0f} now")
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
