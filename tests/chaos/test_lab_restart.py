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
