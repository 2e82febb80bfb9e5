"""The coordination log: a thread that samples the quorum's leader, the cluster's live brokers and
the drill topic's in-sync partitions about once a second from before the fault until after the
heal, into the drill record (coordination.jsonl). The verifier reads from it when the leader
moved and when the lost DC's brokers were fenced (spark/coordination.py): the drill's own probe,
so both coordinations are timed the same way. A DC loss takes its ISR snapshot from the last
sample (chaos/faults/actions.py)."""

from __future__ import annotations

import threading

from dcdrill.infra.constants import now_ms
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess
from dcdrill.record import DrillRecord
from dcdrill.record.ledger import Ledger, loads
from dcdrill.record.models import CoordinationSample, validated


class CoordinationWatch:
    """The samples come from a `watch` agent on the first of hostaccess.observers (outside
    `avoid_dcs`: the DCs the drill cuts, then its target), one JSON line each
    (infra/observe/agent.py); this thread writes them into the record."""

    def __init__(
        self,
        record: DrillRecord,
        inventory: Inventory,
        interval_s: float = 1.0,
        avoid_dcs: tuple[str, ...] = (),
        topic: str | None = None,
    ):
        self.record, self.inventory, self.interval_s = record, inventory, interval_s
        self.host = hostaccess.observers(inventory, avoid_dcs)[0]  # the observer: the journal names it
        self.topic = topic  # the samples also count its in-sync partitions (`isr`)
        self.samples = 0
        self.last_isr: tuple[int, dict] | None = None  # (at_ms, isr) of the latest sample that had one
        self.errors: list[str] = []
        self._agent = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="dcdrill coordination watch")

    def start(self) -> CoordinationWatch:
        log = self.record.log("coordination-watch")
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as stderr:  # the child keeps its own copy of the descriptor
            self._agent = hostaccess.stream(
                self.inventory, "watch", self.host, {"interval_s": self.interval_s, "topic": self.topic}, log=stderr
            )
        self._thread.start()
        return self

    def _run(self) -> None:
        with Ledger(self.record.coordination_log()) as log:
            for n, line in enumerate(self._agent.stdout, 1):
                try:
                    sample = loads(line)
                except ValueError as exc:
                    self.errors.append(f"the watch agent's line {n} is no JSON object: {exc}")
                    continue
                if (
                    isinstance(sample, dict) and "agent_error" in sample
                ):  # a missed sample is a gap in the log, not a failed drill
                    self.errors.append(sample["agent_error"])
                    continue
                try:  # a client host's line, held to the record's model before it is written
                    validated(CoordinationSample, sample, f"the watch agent's line {n}")
                except ValueError as exc:
                    self.errors.append(str(exc))
                    continue
                log.write(sample)
                self.samples += 1
                if sample.get("isr"):
                    self.last_isr = (sample["at_ms"], sample["isr"])

    def isr(self, max_age_ms: int) -> dict | None:
        """The latest sample's {partitions, in_sync} of the topic, if it is at most this old."""
        last = self.last_isr
        return last[1] if last and now_ms() - last[0] <= max_age_ms else None

    def stop(self) -> dict:
        try:
            self._agent.stdin.close()  # the agent ends at its stdin's end
        except OSError:
            pass
        self._thread.join(timeout=30)
        try:
            self._agent.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a session that does not end is ended
            self._agent.kill()
        if self._agent.returncode not in (0, None):
            said = self.record.log("coordination-watch").read_text(errors="replace")[-300:]
            self.errors.append(f"the watch agent exited {self._agent.returncode}: {said}")
        return {"samples": self.samples, "errors": len(self.errors), "last_error": (self.errors or [None])[-1]}
