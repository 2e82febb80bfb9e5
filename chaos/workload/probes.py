"""Is the workload making progress? Used in the steady-state hypothesis and after the fault."""

from __future__ import annotations

import logging
import math
import time

from dcdrill.chaos import context
from dcdrill.chaos.workload.actions import running_workload
from dcdrill.infra.observe import hostaccess

__all__ = ["workload_progressing", "produce_latency_settled"]

logger = logging.getLogger("chaostoolkit")  # Chaos Toolkit's own log: the console and chaostoolkit.log

# Settled: the last two windows' median produce latencies agree within 25 %, or within 2 ms.
SETTLED_RATIO, SETTLED_MS = 0.25, 2.0
POLL_S = 1.0  # how often produce_latency_settled looks again
POLL_MS = int(POLL_S * 1000)


def workload_progressing(within_s: float = 15, configuration: dict = None, secrets: dict = None) -> bool:
    """True when the running workload's acknowledged count grows within `within_s` seconds.
    With no workload running (the hypothesis before the method), one canary record must be
    acknowledged with the stack's acks instead."""
    w = running_workload(configuration)
    if w is None:
        return _canary(configuration, within_s)
    before = w.status()["ok"]
    deadline = time.monotonic() + float(within_s)
    while time.monotonic() < deadline:
        time.sleep(1)
        if w.status()["ok"] > before:
            return True
    return False


def produce_latency_settled(
    window_s: float = 5, timeout_s: float = 60, configuration: dict = None, secrets: dict = None
) -> dict:
    """Wait until the running workload's produce latency has settled, so that the fault meets a
    warm cluster and the drill's timings are not its warm-up. Returns (and keeps in the record's
    baseline.json, for the report) the baseline: p50 and p99 over the last window, the machine's
    spare share, and whether it settled: on the lab, a saturated machine is not settled, since its
    timings are CPU queues as much as Kafka's. If not settled, the cause, also logged; the fault
    then starts, and the report marks its timings.

    It looks once a second at the last two windows, from the first second both hold
    acknowledgements end to end (the workload's first window of acks and the next), so a warm
    cluster settles two windows after its first acknowledgement, with no fixed pause before."""
    from dcdrill.record.contents import BASELINE, SATURATED_IDLE_PCT

    on_lab = context.topology(configuration).backend == "local"  # elsewhere the cluster has CPUs of its own

    run = context.record(configuration)
    w = running_workload(configuration)
    started = time.monotonic()
    window_ms = int(float(window_s) * 1000)
    cpu = [(started, cpu_times())]  # (when, /proc/stat): the spare share over the last window
    while True:
        time.sleep(min(POLL_S, float(window_s)))
        cpu.append((time.monotonic(), cpu_times()))
        while len(cpu) > 2 and cpu[-1][0] - cpu[1][0] >= float(window_s):
            cpu.pop(0)
        idle = idle_pct(cpu[0][1], cpu[-1][1])
        now = int(time.time() * 1000)
        lat = {0: [], 1: []}
        relayed = w.acks_since(now - 2 * window_ms - POLL_MS) if w else []  # relayed by its hosts
        covered = any(ack_ms <= now - 2 * window_ms for ack_ms, _ in relayed)
        for ack_ms, latency in relayed:
            if now - 2 * window_ms <= ack_ms <= now:
                lat[int(ack_ms >= now - window_ms)].append(latency)
        earlier, last = (sorted(v) for v in (lat[0], lat[1]))
        waited = time.monotonic() - started
        steady = covered and bool(earlier and last) and _medians_agree(earlier, last)
        saturated = on_lab and idle is not None and idle < SATURATED_IDLE_PCT
        settled = steady and not saturated
        # Waits for the median only: a cold 2-core lab stays saturated for minutes at the drill's
        # load, so waiting for headroom as well would hold every first drill for the whole timeout.
        # The spare share is read over a whole window.
        if (steady and waited >= float(window_s)) or waited >= float(timeout_s):
            baseline = {
                "settled": settled,
                "waited_s": round(waited, 1),
                "window_s": float(window_s),
                "records": len(last),
                "p50_ms": _p(last, 0.5),
                "p99_ms": _p(last, 0.99),
                "machine_idle_pct": idle,
                "cause": None,
            }
            if not settled:
                baseline["cause"] = unsettled_cause(
                    earlier, last, idle if saturated else None, SATURATED_IDLE_PCT, covered
                )
                logger.warning(
                    "dcdrill: the steady state is not settled after %g s: %s; the fault starts now, "
                    "and the report marks its timings",
                    waited,
                    baseline["cause"],
                )
            run.write_json(BASELINE, baseline)
            return baseline


def unsettled_cause(
    earlier: list[int], last: list[int], saturated_idle: float | None, threshold: float, covered: bool = True
) -> str:
    """Why the produce latency never settled, in words the report and the log show."""
    causes = []
    if saturated_idle is not None:
        causes.append(
            f"the machine was {saturated_idle:g} % idle, saturated below {threshold:g} %: its timings "
            "would be CPU queues as much as Kafka's"
        )
    if not covered:
        causes.append("the workload had not been acknowledged for two whole windows")
    elif not (earlier and last):
        causes.append("no record was acknowledged in one of the last two windows")
    elif not _medians_agree(earlier, last):
        causes.append(f"the median produce latency was still moving ({_p(earlier, 0.5)} ms, then {_p(last, 0.5)} ms)")
    return "; ".join(causes)


def _medians_agree(earlier: list[int], last: list[int]) -> bool:
    return abs(_p(last, 0.5) - _p(earlier, 0.5)) <= max(SETTLED_MS, SETTLED_RATIO * _p(earlier, 0.5))


def cpu_times() -> tuple[int, int] | None:
    """(spare, total) jiffies of this machine's CPUs (/proc/stat), or None where there is none.
    On the lab the cluster shares this machine, so its spare share says whether the drill's
    timings measure Kafka or a CPU queue. Spare is idle, iowait and niced work: a niced process
    (make test's unit tests beside the lab's) yields its CPU to the lab's."""
    try:
        fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[1] + fields[3] + (fields[4] if len(fields) > 4 else 0), sum(
        fields[:8]
    )  # nice + idle + iowait; guest time is already in user


def idle_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round(100 * (after[0] - before[0]) / (after[1] - before[1]), 1)


def _p(values: list[int], q: float) -> int | None:
    """Nearest-rank percentile of sorted values."""
    return values[max(0, math.ceil(len(values) * q) - 1)] if values else None


def _canary(configuration, within_s: float) -> bool:
    """One record to the canary topic with the drill's acks, written from a client host outside
    the DCs the drill cuts and targets when it can (an isolated DC's client reaches only its own
    DC's brokers)."""
    t = context.topology(configuration)
    try:
        return hostaccess.call(
            context.inventory(configuration),
            "canary",
            {"acks": t.acks, "within_s": within_s},
            avoid_dcs=context.observers_avoid(configuration),
            timeout_s=within_s + 30,
        )["acknowledged"]
    except (hostaccess.HostUnreachable, hostaccess.AgentFailed):
        return False
