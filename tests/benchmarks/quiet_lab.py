"""Is the lab quiet enough to measure time? Produce latency and machine idle at the default drill
load (3 producers x 200 records/s, 2 consumers, acks=all), with no fault and no added delay, for
the settings before the quiet lab and today's, side by side in one run on one lab.

    .venv/bin/python tests/benchmarks/quiet_lab.py [--stack local] [--seconds 40] [--warmup 10]
                                                   [--warm-load 120] [--only TEXT]

Needs the lab up (`make lab`). Each setting rolls the brokers onto its JVM flags (through the lab's
supervisor, one broker at a time), runs the workload for --warm-load seconds unmeasured (a
restarted broker's C2 compiles take 1.5 to 2 minutes of this load to settle), then runs it
again and reads the producers' ledgers: latency is ack_ms - send_ms of the records sent after the
warm-up. Idle is /proc/stat over the same window, and CPU is split by process kind from
/proc/<pid>/stat. The brokers are left on their rendered flags at the end. Goal: p50 <= 10 ms,
p99 <= 50 ms, idle >= 40 %.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from dcdrill.chaos.faults.lab import spec_path
from dcdrill.infra import lifecycle
from dcdrill.infra.constants import state_dir
from dcdrill.infra.lab import layout, service, shaper
from dcdrill.record.ledger import read
from dcdrill.validation import workload as wl

C1_ONLY = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
# Consumers that return on the first byte: kafka-python's defaults, the workload's before.
EAGER_CONSUMERS = {"fetch_min_bytes": 1, "fetch_max_wait_ms": 500}
# The settings compared. `broker_opts` replaces the JVM options the role renders (None: those);
# `spec` overrides the workload's defaults.
SETTINGS = {
    "before: C1-only brokers, kafka-python, eager consumers": {
        "broker_opts": C1_ONLY,
        "spec": {"client": "kafka-python", **EAGER_CONSUMERS},
    },
    "C1-only brokers, confluent": {"broker_opts": C1_ONLY, "spec": {}},
    "today: C2 brokers, kafka-python": {"broker_opts": None, "spec": {"client": "kafka-python"}},
    "today: C2 brokers, confluent (the defaults)": {"broker_opts": None, "spec": {}},
}
KINDS = {
    "broker": b"kafka.Kafka",
    "zookeeper": b"QuorumPeerMain",
    "producer": b"dcdrill.validation.producer",
    "consumer": b"dcdrill.validation.consumer",
    "forwarder": b"dcdrill-forwarder",
}


def cpu_ticks() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]  # total, idle + iowait


def kind_ticks() -> dict[str, int]:
    out = dict.fromkeys(KINDS, 0)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        for kind, marker in KINDS.items():
            if marker in cmd:
                out[kind] += int(stat[11]) + int(stat[12])
    return out


def roll_brokers(inv, opts: list[str] | None, server: dict[str, str], originals: dict[str, dict | str]) -> None:
    """Restart each broker with `opts` in place of the rendered JVM options (None: the rendered)
    and `server` over its rendered server.properties."""
    for h in inv.brokers:
        props = Path(h.vars["data_root"]) / "kafka" / "server.properties"
        rendered = originals.setdefault(str(props), props.read_text())
        lines = [ln for ln in rendered.splitlines() if ln.split("=", 1)[0] not in server]
        props.write_text("\n".join(lines + [f"{k}={v}" for k, v in sorted(server.items())]) + "\n")
        path = spec_path(h)
        spec = originals.setdefault(path, service.load(path))
        argv = list(spec["argv"])
        if opts is not None:
            heap_end = max(i for i, a in enumerate(argv) if a.startswith("-Xm")) + 1
            log4j = next(i for i, a in enumerate(argv) if a.startswith("-Dlog4j"))
            extra = [a for a in argv[heap_end:log4j] if a.startswith("-Djava.security") or a.startswith("-Dzookeeper")]
            argv = argv[:heap_end] + opts + extra + argv[log4j:]
        Path(path).write_text(json.dumps({**spec, "argv": argv}))
        service.stop(service.load(path), signal.SIGTERM)
        lifecycle_start(h, path)
    wait_isr(inv)
    preferred_leaders(inv)


def preferred_leaders(inv) -> None:
    """Leaders back on their preferred replicas: a roll leaves them all on the brokers restarted
    first, and one hot broker would measure the roll, not the setting."""
    from dcdrill.infra.observe import hostaccess

    hostaccess.call(inv, "elect_preferred_leaders", {"election_ms": 30_000, "request_ms": 35_000})
    time.sleep(3)


def lifecycle_start(host, path: str) -> None:
    from dcdrill.chaos.faults.lab import start_service

    start_service(host.name, path, host.netns)


def wait_isr(inv, timeout_s: float = 120.0) -> None:
    from dcdrill.infra.observe import status

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if status.healthy(status.cluster_status(inv)):
                return
        except Exception:  # noqa: BLE001 - brokers still starting
            pass
        time.sleep(2)
    raise SystemExit("the cluster did not become healthy after the broker roll")


def start_load(inv, cfg: dict, seconds: float, name: str) -> tuple[Path, wl.Workload]:
    """The setting's workload for `seconds`, on a topic and in a record folder of its own; the
    topic takes cfg["replication"] (infra.topology.Replication) where the setting names one."""
    spec = wl.WorkloadSpec(topic=f"dcdrill-{name}-{int(time.time())}", duration_s=seconds, **cfg["spec"])
    wl.ensure_topic(inv, spec, replication=cfg.get("replication"))
    run = Path(tempfile.mkdtemp(prefix=f"dcdrill-{name}-"))
    return run, wl.Workload(run, inv, spec).start()


def warm(inv, cfg: dict, seconds: float) -> None:
    """The same load, unmeasured."""
    _, w = start_load(inv, cfg, seconds, "quiet-warm")
    w.wait_producers(progress=False)
    w.stop()


def measure(inv, name: str, cfg: dict, seconds: float, warmup: float) -> dict:
    run, w = start_load(inv, cfg, seconds, "quiet")
    marks: dict[str, tuple] = {}
    timer = threading.Timer(warmup, lambda: marks.setdefault("a", (time.time(), cpu_ticks(), kind_ticks())))
    timer.start()
    end_timer = threading.Timer(seconds - 2, lambda: marks.setdefault("b", (time.time(), cpu_ticks(), kind_ticks())))
    end_timer.start()
    w.wait_producers(progress=False)
    w.stop()
    (t0, (tot0, idle0), k0), (t1, (tot1, idle1), k1) = marks["a"], marks["b"]
    lat = sorted(
        r["ack_ms"] - r["send_ms"]
        for f in (run / "produced").glob("*.jsonl")
        for r in read(f)[0]
        if r["status"] == "ok" and t0 * 1000 <= r["send_ms"] <= t1 * 1000
    )
    hz, wall = os.sysconf("SC_CLK_TCK"), t1 - t0
    return {
        "setting": name,
        "records": len(lat),
        "p50_ms": lat[len(lat) // 2] if lat else None,
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "idle_pct": round(100 * (idle1 - idle0) / max(1, tot1 - tot0), 1),
        "cpu_pct_of_core": {k: round(100 * (k1[k] - k0[k]) / hz / wall, 1) for k in KINDS},
    }


def load_arguments(description: str, warm_load_s: float, warm_load_after: str) -> argparse.ArgumentParser:
    """The options every load benchmark takes: the stack, how long to measure, what to leave out."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--stack", default="local")
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of the measured run not counted")
    ap.add_argument(
        "--warm-load", type=float, default=warm_load_s, help=f"seconds of unmeasured load after {warm_load_after}"
    )
    return ap


def print_table(results: list[dict], width: int) -> None:
    print(f"  {'setting':<{width}} {'p50 ms':>7} {'p99 ms':>7} {'idle %':>7}  CPU % of a core")
    for r in results:
        cpu = ", ".join(f"{k} {v:g}" for k, v in r["cpu_pct_of_core"].items() if v)
        print(f"  {r['setting']:<{width}} {r['p50_ms']!s:>7} {r['p99_ms']!s:>7} {r['idle_pct']:>7}  {cpu}")


def main() -> None:
    ap = load_arguments(__doc__.split("\n\n")[0], 120.0, "each roll")
    ap.add_argument("--only", help="run only the settings whose name contains this")
    args = ap.parse_args()
    inv = lifecycle.inventory(args.stack)
    originals: dict[str, dict] = {}
    results = []
    links = shaper.installed(layout.shaper_dir(state_dir()))
    configured = links.current()
    links.apply({pair: shaper.LinkShape() for pair in configured})  # no added delay
    try:
        for name, cfg in SETTINGS.items():
            if args.only and args.only not in name:
                continue
            roll_brokers(inv, cfg["broker_opts"], cfg.get("server", {}), originals)
            if args.warm_load > 0:
                warm(inv, cfg, args.warm_load)
            results.append(measure(inv, name, cfg, args.seconds, args.warmup))
            print(json.dumps(results[-1]), flush=True)
    finally:
        if originals:
            roll_brokers(inv, None, {}, originals)
        links.apply(configured)
    print(
        f"\ndefault drill load, {args.seconds:g} s each after {args.warm_load:g} s of load, latency after "
        f"a {args.warmup:g} s warm-up:"
    )
    print_table(results, 52)
    print("  goal: p50 <= 10 ms, p99 <= 50 ms, idle >= 40 %")


if __name__ == "__main__":
    main()
