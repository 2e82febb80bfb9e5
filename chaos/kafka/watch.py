"""The coordination log: a thread that samples the quorum's leader and the cluster's live brokers
about once a second from before the fault until after the heal, into the drill record
(coordination.jsonl). The verifier reads from it when the leader moved and when the lost DC's
brokers were fenced (spark/coordination.py): the drill's own probe, so both coordinations are
timed the same way."""
from __future__ import annotations

import threading

from dcdrill.infra import status
from dcdrill.infra.inventory import Inventory
from dcdrill.record import DrillRecord
from dcdrill.record.ledger import Ledger


class CoordinationWatch:
    def __init__(self, record: DrillRecord, inventory: Inventory, interval_s: float = 1.0):
        self.record, self.inventory, self.interval_s = record, inventory, interval_s
        self.samples = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="dcdrill coordination watch")

    def start(self) -> CoordinationWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        with Ledger(self.record.coordination_log()) as log:
            while not self._stop.is_set():
                try:
                    log.write(status.coordination_sample(self.inventory))
                    self.samples += 1
                except Exception as exc:  # noqa: BLE001 - a missed sample is a gap in the log, not a failed drill
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                self._stop.wait(self.interval_s)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(timeout=30)
        return {"samples": self.samples, "errors": len(self.errors), "last_error": (self.errors or [None])[-1]}
