"""The lab's inter-DC links on the real lab: the configured delay is the round trip ping sees,
`degrade_link` changes delay and loss at run time and heal puts the configuration back, and the
userspace forwarder (this kernel has no sch_netem) is restarted when it dies and never bypassed."""

import os
import re
import signal
import statistics
import subprocess
import time

import pytest

from dcdrill.chaos.faults.driver import Undo
from dcdrill.chaos.faults.lab import LabFaults
from dcdrill.infra import stack
from dcdrill.infra.constants import state_dir
from dcdrill.infra.lab import layout, netns, shaper

pytestmark = pytest.mark.lab


def ping(src_ns: str, dst: str, count: int = 30, interval: float = 0.02) -> tuple[list[float], int]:
    """Round trips in ms, and how many of `count` were lost."""
    out = subprocess.run(
        ["ip", "netns", "exec", src_ns, "ping", "-n", "-c", str(count), "-i", str(interval), "-W", "1", dst],
        capture_output=True,
        text=True,
    ).stdout
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
    return rtts, count - len(rtts)


def host(lab, role: str, dc: str):
    return next(h for h in lab.hosts() if h.role == role and h.dc == dc)


@pytest.fixture
def driver(lab):
    return LabFaults(stack.load("local"), lab, stack.backend("local"))


def links():
    return shaper.installed(layout.shaper_dir(state_dir()))


def test_the_configured_delay_is_the_round_trip_between_dcs_and_not_within_one(lab):
    assert links().kind == "forwarder"  # no sch_netem here
    a, b = host(lab, "client", "dc-a"), host(lab, "kafka_broker", "dc-b")
    rtts, lost = ping(a.netns, b.name)
    assert lost == 0 and 10 <= statistics.median(rtts) <= 11.5, rtts  # local: latencyMs 5, one way
    rtts, _ = ping(a.netns, host(lab, "kafka_broker", "dc-a").name)
    assert statistics.median(rtts) < 1.5, rtts  # same DC: the bridge, no forwarder


def test_degrade_link_changes_delay_and_loss_at_run_time_and_heal_restores_them(lab, driver):
    a, b, c = host(lab, "client", "dc-a"), host(lab, "kafka_broker", "dc-b"), host(lab, "zookeeper", "dc-c")
    undo = Undo()
    try:
        driver.degrade_link("dc-a", "dc-b", 20, 0, 0, undo)
        rtts, lost = ping(a.netns, b.name)
        assert lost == 0 and 40 <= statistics.median(rtts) <= 44, rtts
        assert statistics.median(ping(a.netns, c.name)[0]) <= 11.5  # dc-a <-> dc-c keeps its 5 ms
    finally:
        driver.undo(undo.data)
    assert statistics.median(ping(a.netns, b.name)[0]) <= 11.5
    assert links().current() == layout.link_table(driver.topology, driver.backend.settings)

    undo = Undo()
    try:
        driver.degrade_link("dc-a", "dc-b", 0, 0, 50, undo)
        _, lost = ping(a.netns, b.name, count=200, interval=0.005)
        # Each round trip crosses twice: 1 - 0.5 * 0.5 = 75 % lost, within sampling noise.
        assert 120 <= lost <= 180, lost
    finally:
        driver.undo(undo.data)
    assert ping(a.netns, b.name, count=50, interval=0.005)[1] == 0


def test_a_dead_forwarder_is_restarted_and_its_absence_holds_traffic_never_bypasses_it(lab):
    a, b = host(lab, "client", "dc-a"), host(lab, "kafka_broker", "dc-b")
    fwd = links()
    [worker] = fwd.worker_pids()
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while fwd.worker_pids() in ([], [worker]):
        assert time.monotonic() < deadline, "the supervisor did not restart the worker"
        time.sleep(0.05)
    rtts, lost = ping(a.netns, b.name, count=10)
    assert lost == 0 and statistics.median(rtts) >= 10, rtts  # delayed again, not direct
    fwd.check()

    table = fwd.current()
    [worker] = fwd.worker_pids()
    os.kill(fwd.supervisor_pid(), signal.SIGKILL)
    os.kill(worker, signal.SIGKILL)
    try:
        with pytest.raises(shaper.ShaperDown, match="forwarder is not running"):
            fwd.check()
        _, lost = ping(a.netns, b.name, count=10)
        assert lost == 10  # held at the TUN with no reader, not routed around it
    finally:
        fwd.install(table)  # what `dcdrill lab up` does
    assert ping(a.netns, b.name, count=10)[1] == 0

    fwd.remove()  # leaves no device, rule, route or process
    try:
        r = netns.ROUTER
        assert not netns.link_exists(shaper.TUN, r)
        assert "lookup 100" not in netns.sh("ip", "rule", "show", ns=r)
        assert not netns.sh("ip", "route", "show", "table", shaper.TABLE, ns=r).strip()
        assert not subprocess.run(["pgrep", "-f", "dcdrill-forwarder"], capture_output=True).stdout
    finally:
        fwd.install(table)
    rtts, lost = ping(a.netns, b.name, count=10)
    assert lost == 0 and statistics.median(rtts) >= 10
