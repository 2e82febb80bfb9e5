"""The same drill with each producer client, side by side in one run on one lab: how many
outcomes each leaves definite (acknowledged or known failed) against indeterminate, what the
verdict says, and what the workload's processes cost in CPU at the drill's default load.

    .venv/bin/python tests/benchmarks/client_drills.py [--stack local] [--experiment kill-dc]
                                                     [--clients confluent java] [--rounds 1]

Needs the lab up (`make lab`). Each drill is `dcdrill drill` as a user runs it. CPU is the
workload processes' own (every process under the agents' uids, validation/workload.agent_uid:
the Python producers and consumers, and the java client's JVMs), read from /proc/<pid>/stat
every 0.5 s while the drill runs; per 1,000 records produced, so the clients compare at the
records each sent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from dcdrill.validation import workload as wl

TICKS = os.sysconf("SC_CLK_TCK")
AGENT_UIDS = range(wl.AGENT_GID + 1, wl.AGENT_GID + 30_001)
KINDS = [(k, wl.agent_uid(n)) for k, n in (("audit", "a"), ("consumers", "c0"), ("producers", "p0"))]


class CpuSampler(threading.Thread):
    """Each agent process's latest utime + stime; a process seen once counts with its last reading."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: dict[int, tuple[str, float]] = {}  # pid -> (producers | consumers | audit, seconds)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    uid = os.stat(f"/proc/{pid}").st_uid
                    if uid not in AGENT_UIDS:
                        continue
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                kind = next(k for k, first in KINDS if uid >= first)
                self.seen[int(pid)] = (kind, (int(fields[11]) + int(fields[12])) / TICKS)

    def seconds(self, kind: str | None = None) -> float:
        return sum(s for k, s in self.seen.values() if kind in (None, k))


def drill(stack: str, experiment: str, client: str, run: Path) -> dict:
    sampler = CpuSampler()
    sampler.start()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "drill", "--stack", stack, "--experiment", experiment]
        + ["--client", client, "--run-dir", str(run)],
        capture_output=True,
        text=True,
    )
    sampler.done.set()
    sampler.join()
    summary = json.loads((run / "report" / "summary.json").read_text()) if done.returncode in (0, 1) else {}
    c = summary.get("counts", {})
    produced = c.get("produced", 0)
    return {
        "client": client,
        "exit": done.returncode,
        "verdict": summary.get("verdict", "-"),
        "produced": produced,
        "acked": c.get("acked", 0),
        "failed": c.get("failed", 0),
        "indeterminate": c.get("indeterminate", 0),
        "acked_lost": c.get("acked_lost", 0),
        "duplicates": c.get("duplicates_in_log", 0),
        "definite_pct": 100 * (produced - c.get("indeterminate", 0)) / produced if produced else 0.0,
        "cpu_s": sampler.seconds(),
        "producers_cpu_s": sampler.seconds("producers"),
        "consumers_cpu_s": sampler.seconds("consumers"),
        "cpu_ms_per_1000": 1e6 * sampler.seconds() / produced if produced else 0.0,
        "wall_s": time.monotonic() - started,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default="local")
    p.add_argument("--experiment", default="kill-dc")
    p.add_argument("--clients", nargs="+", default=["confluent", "java"], choices=wl.CLIENTS)
    p.add_argument("--rounds", type=int, default=1, help="drills per client, alternating")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dcdrill-client-drills-") as tmp:
        for n in range(args.rounds):
            for client in args.clients:
                row = drill(args.stack, args.experiment, client, Path(tmp) / f"{client}-{n}")
                print(json.dumps(row), flush=True)
                rows.append(row)
    head = ["client", "verdict", "produced", "acked", "failed", "indeterminate", "definite %", "acked lost"]
    head += ["duplicates", "workload CPU s (producers, consumers)", "CPU ms / 1000 records"]
    print("\n| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    for r in rows:
        cells = [r["client"], r["verdict"], r["produced"], r["acked"], r["failed"], r["indeterminate"]]
        cpu = f"{r['cpu_s']:.1f} ({r['producers_cpu_s']:.1f}, {r['consumers_cpu_s']:.1f})"
        cells += [f"{r['definite_pct']:.1f}", r["acked_lost"], r["duplicates"], cpu]
        cells += [f"{r['cpu_ms_per_1000']:.0f}"]
        print("| " + " | ".join(map(str, cells)) + " |")
    per = {c: statistics.median(r["cpu_ms_per_1000"] for r in rows if r["client"] == c) for c in args.clients}
    if "java" in per and per.get("confluent"):
        print(f"\njava / confluent CPU per record (medians of {args.rounds}): {per['java'] / per['confluent']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
