"""The lab's inter-DC forwarder (infra/lab/forwarder): is the delay it adds the delay configured,
how much does one TCP stream get through it, and what does it cost, idle and under the default
drill load (3 producers x 200 records/s, 2 consumers), in one run on one lab.

    .venv/bin/python tests/benchmarks/forwarder.py [--stack local] [--one-way-ms 20]

Needs the lab up (`make lab`). Sets every DC pair to the one-way delay for the run and puts the
stack's own shapes back at the end. Goals (issue 23): round trip = 2 x one-way within +-10 % at
p50 and +25 % at p99, idle and loaded; >= 50 MB/s on one stream; forwarder < 20 % of a core.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from dcdrill.infra import lifecycle
from dcdrill.infra.constants import state_dir
from dcdrill.infra.lab import layout, shaper
from dcdrill.validation import workload as wl

SINK = """import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 5201)); s.listen(1)
c, _ = s.accept(); n = 0; t0 = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    t0 = t0 or time.monotonic(); n += len(b)
print(n / (time.monotonic() - t0))
"""
SOURCE = """import socket, sys, time
c = socket.create_connection((sys.argv[1], 5201)); buf = b"x" * (1 << 20); end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end: c.sendall(buf)
c.close()
"""


def ping(ns: str, dst: str, count: int = 300, interval: float = 0.01) -> list[float]:
    # ping at the forwarder's real-time priority: the probe's own scheduling delay is not the link's.
    out = subprocess.run(
        [
            "chrt",
            "--fifo",
            shaper.RT_PRIORITY,
            "ip",
            "netns",
            "exec",
            ns,
            "ping",
            "-n",
            "-c",
            str(count),
            "-i",
            str(interval),
            dst,
        ],
        capture_output=True,
        text=True,
    ).stdout
    return sorted(float(x) for x in re.findall(r"time=([\d.]+) ms", out))


def pct(values: list[float], q: float) -> float:
    return values[max(0, int(len(values) * q + 0.999999) - 1)]


def stream(src_ns: str, dst_ns: str, dst: str, seconds: float) -> float:
    """MB/s of one TCP stream from src to dst. The lab firewall admits no such flow: the benchmark
    opens its port on dst for the stream alone."""
    rule = [
        "INPUT",
        "-p",
        "tcp",
        "--dport",
        "5201",
        "-m",
        "comment",
        "--comment",
        "forwarder benchmark",
        "-j",
        "ACCEPT",
    ]
    subprocess.run(["ip", "netns", "exec", dst_ns, "iptables", "-I", *rule], check=True)
    try:
        sink = subprocess.Popen(
            ["ip", "netns", "exec", dst_ns, sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True
        )
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "exec", src_ns, sys.executable, "-c", SOURCE, dst, str(seconds)], check=True)
        return float(sink.communicate(timeout=30)[0]) / 1e6
    finally:
        subprocess.run(["ip", "netns", "exec", dst_ns, "iptables", "-D", *rule], check=True)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def verdict(rtts: list[float], target: float) -> str:
    p50, p99 = pct(rtts, 0.5), pct(rtts, 0.99)
    ok = abs(p50 - target) <= 0.1 * target and p99 <= 1.25 * target
    return (
        f"p50 {p50:6.2f} ms ({p50 / target - 1:+.1%}), p99 {p99:6.2f} ms ({p99 / target - 1:+.1%})  "
        f"{'ok' if ok else 'MISSED'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="local")
    ap.add_argument("--one-way-ms", type=float, default=20.0)
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    a, b = (next(h for h in inv.clients if h.dc == dc) for dc in sorted({h.dc for h in inv.clients})[:2])
    links = shaper.installed(layout.shaper_dir(state_dir()))
    configured = links.current()
    target = 2 * args.one_way_ms
    links.apply({pair: shaper.LinkShape(args.one_way_ms) for pair in configured})
    try:
        idle = ping(a.netns, b.name)
        mbs = stream(a.netns, b.netns, b.name, 10)
        spec = wl.WorkloadSpec(topic=f"dcdrill-fwd-bench-{int(time.time())}", duration_s=45)
        wl.ensure_topic(inv, spec)
        w = wl.Workload(Path(tempfile.mkdtemp(prefix="dcdrill-fwd-")), inv, spec).start()
        time.sleep(10)
        [worker] = links.worker_pids()
        t0, c0 = time.monotonic(), cpu_ticks(worker)
        loaded: list[float] = []
        pinger = threading.Thread(target=lambda: loaded.extend(ping(a.netns, b.name, count=1000, interval=0.02)))
        pinger.start()
        pinger.join()
        cpu = (cpu_ticks(worker) - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)
        w.wait_producers(progress=False)
        w.stop()
    finally:
        links.apply(configured)
    print(f"forwarder, {args.one_way_ms:g} ms one way between {a.dc} and {b.dc} (round trip {target:g} ms):")
    print(f"  round trip, idle                      {verdict(sorted(idle), target)}")
    print(f"  round trip, default drill load        {verdict(sorted(loaded), target)}")
    print(f"  one TCP stream                        {mbs:6.1f} MB/s  {'ok' if mbs >= 50 else 'MISSED'} (goal >= 50)")
    print(
        f"  forwarder CPU, default drill load     {cpu:6.1%} of a core  {'ok' if cpu < 0.2 else 'MISSED'} (goal < 20 %)"
    )


if __name__ == "__main__":
    main()
