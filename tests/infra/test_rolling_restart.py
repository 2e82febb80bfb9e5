"""A config change rolls through the brokers (site.yml `serial: 1`, the kafka_broker role's
handler): each broker restarts once, and the next one only after the cluster has no
under-replicated partition, so the cluster never has two brokers down. Real lab, real site.yml."""
import json
import os
import threading
from pathlib import Path

import pytest

from dcdrill.infra import ansible, status
from dcdrill.infra.lab import service

pytestmark = pytest.mark.lab
CHANGED = {"log.cleaner.backoff.ms": "15001"}  # harmless: the cleaner's idle wait


def _pids(inv) -> dict[str, int | None]:
    return {h.name: service.running_pid(service.load(str(Path(h.vars["data_root"]) / "kafka" / "kafka.json")))
            for h in inv.brokers}


class Watch:
    """The fewest brokers the cluster counts alive (registered and reachable), sampled all along."""

    def __init__(self, inv):
        self.inv, self.fewest, self.samples = inv, len(inv.brokers), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.2):
            try:
                st = status.cluster_status(self.inv)
            except Exception:  # noqa: BLE001 - a restarting bootstrap broker: no sample
                continue
            alive = sum(1 for b in st["brokers"] if b["alive"])
            if st["error"] or not alive:  # the status call reached no broker this time: no sample
                continue
            self.fewest = min(self.fewest, alive)
            self.samples += 1

    def stop(self):
        self._stop.set()
        self._thread.join()


def _started_s(pid: int) -> float:
    """When the process started, in seconds since boot (/proc/<pid>/stat's starttime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _with_properties(stack: str, extra: dict) -> str:
    path = ansible.inventory_path(stack)
    original = path.read_text()
    inv = json.loads(original)
    inv["all"]["vars"]["kafka_broker_custom_properties"] = {
        **inv["all"]["vars"].get("kafka_broker_custom_properties", {}), **extra}
    path.write_text(json.dumps(inv))
    return original


def test_a_config_change_restarts_one_broker_at_a_time(lab):
    before = _pids(lab)
    assert all(before.values()), before
    original = _with_properties("local", CHANGED)
    watch = Watch(lab)
    try:
        stats = ansible.run_site("local", quiet=True)
    finally:
        watch.stop()
        ansible.inventory_path("local").write_text(original)
    after = _pids(lab)
    assert all(after[b] and after[b] != before[b] for b in before), (before, after)  # each restarted
    assert watch.samples > 20 and watch.fewest >= len(before) - 1, watch.fewest  # never two down at once
    starts = sorted(_started_s(pid) for pid in after.values())
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 3, gaps  # one at a time: each after the one before was back and in sync
    assert all(stats[b].get("changed", 0) > 0 for b in before)
    for h in lab.brokers:
        assert "log.cleaner.backoff.ms=15001" in (Path(h.vars["data_root"]) / "kafka" / "server.properties").read_text()
    assert status.cluster_status(lab)["under_replicated_partitions"] == 0
    # The brokers keep the changed setting (a cleaner backoff one millisecond longer, which nothing
    # measures): rolling them back would be the same roll again, about 100 s of CI. The inventory
    # is restored, so the next `lab up` rolls them back.
