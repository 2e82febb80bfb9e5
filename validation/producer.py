"""One sequenced producer process: seq = 0, 1, 2, ... densely, one ledger row per record.

    python -m validation.producer --config JSON     (the launcher, validation/workload.py, starts it)
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from validation import clients, outcomes
from validation.ledger import Ledger, LedgerError


class SequencedProducer:
    def __init__(self, cfg: dict, stop: clients.StopFlag):
        from kafka import KafkaProducer

        self.cfg, self.stop = cfg, stop
        self.pid, self.dc, self.topic = cfg["producer_id"], cfg.get("dc"), cfg["topic"]
        run = Path(cfg["run_dir"])
        self.ledger = Ledger(run / "produced" / f"{self.pid}.jsonl")
        self.status_path = run / "status" / f"producer-{self.pid}.json"
        self.status_path.parent.mkdir(parents=True, exist_ok=True)
        self.counts = {"sent": 0, "ok": 0, "fail": 0, "info": 0}
        self.pending: dict[int, dict] = {}
        self.lock = threading.Lock()
        self.broken: str | None = None
        acks = {"all": "all", "1": 1, "0": 0}[str(cfg["acks"])]
        self.retries = int(cfg["retries"])
        self.client = KafkaProducer(
            bootstrap_servers=cfg["bootstrap"], client_id=f"dcdrill-{self.pid}", acks=acks,
            retries=self.retries, enable_idempotence=bool(cfg["idempotence"]),
            delivery_timeout_ms=int(cfg["delivery_timeout_ms"]), request_timeout_ms=int(cfg["request_timeout_ms"]),
            linger_ms=int(cfg["linger_ms"]), batch_size=int(cfg["batch_size"]), max_block_ms=5000,
            bootstrap_timeout_ms=int(cfg["bootstrap_timeout_ms"]),
            max_in_flight_requests_per_connection=int(cfg["max_in_flight"]),
        )
        parts = None
        deadline = time.monotonic() + cfg["bootstrap_timeout_ms"] / 1000
        while parts is None and time.monotonic() < deadline:
            parts = self.client.partitions_for(self.topic)
        if not parts:
            raise SystemExit(f"producer {self.pid}: topic {self.topic!r} has no partitions visible")
        self.partitions = len(parts)

    # -- outcomes (called from the client's I/O thread) ---------------------------------------------
    def _settle(self, seq: int, status: str, offset: int | None = None, error: str | None = None) -> None:
        with self.lock:
            row = self.pending.pop(seq, None)
            if row is None:
                return
            row.update(status=status, ack_ms=clients.now_ms(), offset=offset, error=error)
            self.counts[status] += 1
        try:
            self.ledger.write(row)
        except LedgerError as exc:
            self.broken = str(exc)
            self.stop.event.set()

    def _send(self, seq: int) -> None:
        key = f"k{seq % self.cfg['keys']}"
        partition = clients.partition_for(key, self.partitions)
        send_ms = clients.now_ms()
        row = {"producer_id": self.pid, "seq": seq, "topic": self.topic, "partition": partition, "key": key,
               "send_ms": send_ms, "status": None, "ack_ms": None, "offset": None, "error": None, "dc": self.dc}
        with self.lock:
            self.pending[seq] = row
            self.counts["sent"] += 1
        value = clients.encode_value(self.pid, seq, send_ms, self.cfg["record_size"])
        try:
            fut = self.client.send(self.topic, key=key.encode(), value=value, partition=partition)
        except Exception as exc:  # noqa: BLE001 - raised before the record left the client
            self._settle(seq, outcomes.classify(exc, 0) if "metadata" in str(exc).lower() else "info",
                         error=outcomes.describe(exc))
            return
        fut.add_callback(lambda md, s=seq: self._settle(s, "ok", offset=md.offset))
        fut.add_errback(lambda exc, s=seq: self._settle(s, outcomes.classify(exc, self.retries),
                                                        error=outcomes.describe(exc)))

    def _report(self) -> None:
        with self.lock:
            snap = {**self.counts, "in_flight": len(self.pending), "dc": self.dc, "producer_id": self.pid}
        clients.write_status(self.status_path, snap)

    def run(self) -> int:
        cfg = self.cfg
        rate, count = cfg.get("rate"), cfg.get("count")
        end = time.monotonic() + cfg["duration_s"] if cfg.get("duration_s") else None
        start = time.monotonic()
        last_report = 0.0
        seq = 0
        while not self.stop and (count is None or seq < count) and (end is None or time.monotonic() < end):
            if rate:
                ahead = start + seq / rate - time.monotonic()
                if ahead > 0:
                    if self.stop.wait(min(ahead, 0.05)):
                        break
                    continue
            self._send(seq)
            seq += 1
            if time.monotonic() - last_report > 1.0:
                self._report()
                last_report = time.monotonic()
        # Let in-flight records resolve, then record the rest as indeterminate: never drop a row.
        self.client.flush(timeout=cfg["delivery_timeout_ms"] / 1000 + 5)
        self.client.close(timeout=5)
        with self.lock:
            leftover = list(self.pending)
        for s in leftover:
            self._settle(s, "info", error="unresolved when the producer stopped")
        self._report()
        self.ledger.close()
        if self.broken:
            print(f"producer {self.pid}: stopped sending: {self.broken}", file=sys.stderr)
            return 1
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m validation.producer", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="JSON settings written by validation/workload.py")
    cfg = json.loads(p.parse_args(argv).config)
    stop = clients.StopFlag()
    try:
        producer = SequencedProducer(cfg, stop)
    except Exception as exc:  # noqa: BLE001 - one clear line, not a trace
        if "bootstrap" in str(exc).lower() or type(exc).__name__ in ("NoBrokersAvailable", "KafkaTimeoutError"):
            print(f"producer {cfg['producer_id']}: no broker reachable at {', '.join(cfg['bootstrap'])} "
                  f"within {cfg['bootstrap_timeout_ms']} ms", file=sys.stderr)
            return 2
        raise
    return producer.run()


if __name__ == "__main__":
    sys.exit(main())
