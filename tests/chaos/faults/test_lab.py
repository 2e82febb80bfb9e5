"""The lab heal's restart loop (chaos/faults/lab.restart), with the supervisor stubbed: a broker
that exits some seconds after its start (NodeExists, while its old ZooKeeper session lives) is
started again, and the heal returns only once every service stayed up `settle_s` after the last
start."""

import time

import pytest

from dcdrill.chaos.faults import lab


@pytest.fixture
def supervisor(monkeypatch):
    state = {"starts": [], "dies_at": {}}

    def start(name, spec, ns):
        state["starts"].append((name, time.monotonic()))
        if sum(n == name for n, _ in state["starts"]) == 1:
            state["dies_at"][name] = time.monotonic() + 1.5  # its first start exits 1.5 s in
        else:
            state["dies_at"][name] = float("inf")

    monkeypatch.setattr(lab, "start_service", start)
    monkeypatch.setattr(lab.service, "load", lambda spec: spec)
    monkeypatch.setattr(lab.service, "running_pid", lambda spec: time.monotonic() < state["dies_at"].get(spec, 0))
    return state


def test_a_service_that_exits_after_its_start_is_started_again_and_watched_again(supervisor):
    began = time.monotonic()
    lab.restart([["b1", "b1", "ns-b1"]], within_s=30, settle_s=3)
    starts = [t - began for n, t in supervisor["starts"]]
    assert len(starts) == 2 and 1.5 <= starts[1] < 3.5, starts  # the exit seen, the broker started again
    assert time.monotonic() - began >= starts[1] + 3  # and watched a whole settle after that


def test_one_that_never_stays_up_fails_the_heal_naming_it(supervisor, monkeypatch):
    monkeypatch.setattr(lab.service, "running_pid", lambda spec: False)
    with pytest.raises(RuntimeError, match="would not stay up within 2s: b1"):
        lab.restart([["b1", "b1", "ns-b1"]], within_s=2, settle_s=1)


@pytest.fixture
def driver(topo):
    from dcdrill.infra import inventory

    t = topo([("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)])
    inv = inventory.build(t, {h.name: h.name for h in t.hosts()})
    return lab.LabFaults(t, inv, backend=None)  # the settle needs no backend


def _undo(d, killed_ago_ms: int) -> dict:
    return {
        "restart": [[h.name, "spec", "ns"] for h in d.inventory.in_dc("dc-a")],
        "killed_ms": lab.now_ms() - killed_ago_ms,
    }


def test_heal_starts_killed_brokers_with_no_settle_once_the_cluster_dropped_them(driver, monkeypatch):
    """A broker started while its old registration lives can exit at start (NodeExists): heal
    asks a client host until the killed brokers are no longer live, then needs no settle."""
    asked = []
    killed = {h.node_id for h in driver.inventory.in_dc("dc-a", ("kafka_broker",))}

    def call(inv, name, args, avoid_dcs, timeout_s):
        asked.append((name, avoid_dcs))
        return {"answered": True, "brokers": sorted(killed) + [3, 4] if len(asked) < 3 else [3, 4]}

    monkeypatch.setattr(lab.hostaccess, "call", call)
    monkeypatch.setattr(lab.time, "sleep", lambda s: None)
    assert driver._settle_s(_undo(driver, 5_000)) == 0.0
    assert asked == [("coordination_sample", ["dc-a"])] * 3  # observed from outside the killed DC
    asked.clear()
    assert driver._settle_s(_undo(driver, lab.SESSION_GRACE_MS + 1)) == 0.0 and not asked  # long dead


def test_heal_keeps_the_settle_when_nobody_can_say(driver, monkeypatch):
    def call(*a, **kw):
        raise lab.hostaccess.HostUnreachable("no client host answered")

    monkeypatch.setattr(lab.hostaccess, "call", call)
    assert driver._settle_s(_undo(driver, 5_000)) == lab.RESTART_SETTLE_S


def test_a_killed_service_counts_as_stopped_at_once_though_no_one_reaped_it(tmp_path, monkeypatch):
    """The lab's services are children of init, which reaps in its own time: stop() must not wait
    its whole timeout on a zombie. A grandchild whose parent never waits stands in for one."""
    import subprocess

    pidfile = tmp_path / "pid"
    holder = subprocess.Popen(["sh", "-c", f"sleep 300 & echo $! > {pidfile}; exec sleep 300"])
    try:
        deadline = time.monotonic() + 5
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        spec = {"pidfile": str(pidfile), "argv": ["sleep"], "match": "sleep"}
        # $! is known at fork, before the child has exec'd sleep: until then it is not the service.
        while lab.service.running_pid(spec) != pid and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lab.service.running_pid(spec) == pid
        began = time.monotonic()
        assert lab.service.stop(spec, 9, timeout_s=5) == "stopped"
        assert time.monotonic() - began < 2
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        assert state == "Z"  # still there, unreaped: what the old wait took for alive
        assert not lab.service._alive(pid) and not pidfile.exists()
    finally:
        holder.kill()
        holder.wait()


def test_heal_starts_again_a_broker_that_exits_until_the_cluster_lists_it(driver, supervisor, monkeypatch):
    """After a fault that took the quorum too, a restarted broker's old registration outlives any
    clock since the kill (NodeExists at start): heal starts it again until the cluster lists it."""
    killed = sorted(h.node_id for h in driver.inventory.in_dc("dc-a", ("kafka_broker",)))

    def status(*alive):
        return {"brokers": [{"id": i, "alive": i in alive} for i in (*killed, 3, 4)]}

    # nobody answers; then the old registrations are listed but the restarted brokers are not live
    samples = iter([{}, status(3, 4)] * 2)

    def call(inv, name, args, timeout_s, avoid_dcs=()):
        assert name == "cluster_status"
        return next(samples, status(*killed, 3, 4))

    monkeypatch.setattr(lab.hostaccess, "call", call)
    real_sleep = time.sleep
    monkeypatch.setattr(lab.time, "sleep", lambda s: real_sleep(0.5))
    specs = [[h.name, h.name, "ns"] for h in driver.inventory.in_dc("dc-a", ("kafka_broker",))]
    for name, spec, ns in specs:  # started once by restart(); each exits 1.5 s in
        lab.start_service(name, spec, ns)
    assert driver._until_registered(specs, within_s=30)
    starts = [n for n, _ in supervisor["starts"]]
    assert sorted(starts) == sorted([s[0] for s in specs] * 2)  # each exited and was started again
    monkeypatch.setattr(lab.hostaccess, "call", lambda *a, **k: status(3, 4))
    assert not driver._until_registered(specs, within_s=1)  # never listed: said so, the wait names why


def test_heal_starts_zookeeper_before_it_decides_when_the_brokers_may_start(driver, monkeypatch):
    """A DC's ZooKeeper is started before the wait for its brokers' old sessions: that wait
    needs the quorum, which the restarted peer helps to form."""
    running, asked = set(), []
    monkeypatch.setattr(lab, "start_service", lambda name, spec, ns: running.add(name))
    monkeypatch.setattr(lab.service, "load", lambda spec: spec)
    monkeypatch.setattr(lab.service, "running_pid", lambda spec: spec in running)
    monkeypatch.setattr(lab.LabFaults, "_settle_s", lambda self, undo: asked.append(set(running)) or 0.0)
    monkeypatch.setattr(lab.LabFaults, "_until_registered", lambda self, specs: True)
    undo = {"restart": [[h.name, h.name, "ns"] for h in driver.inventory.in_dc("dc-a")], "killed_ms": lab.now_ms()}
    driver.undo(undo)
    assert asked == [{h.name for h in driver.inventory.in_dc("dc-a", ("zookeeper",))}]
    assert running == {h.name for h in driver.inventory.in_dc("dc-a")}
