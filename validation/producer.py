"""One sequenced producer process: seq = 0, 1, 2, ... densely, one ledger row per record.

python -m dcdrill.validation.producer --config JSON     (the launcher, validation/workload.py, starts it)
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import zlib

from dcdrill.infra.constants import now_ms
from dcdrill.record import DrillRecord
from dcdrill.record.ledger import IntentLog, Ledger, LedgerError
from dcdrill.validation import clients
from dcdrill.validation.backends import BACKENDS

# How long a transaction's end is awaited: its commit retried within the transaction timeout
# (java_client.TRANSACTION_TIMEOUT_MS), an abort, and a new producer's registration.
TRANSACTION_WAIT_S = 60.0


class SequencedProducer:
    def __init__(self, cfg: dict, stop: clients.StopFlag):
        self.cfg, self.stop = cfg, stop
        self.pid, self.dc, self.topic = cfg["producer_id"], cfg.get("dc"), cfg["topic"]
        run = self.record = DrillRecord(cfg["run_dir"])
        self.ledger = Ledger(run.produced(self.pid))
        self.transactions = Ledger(run.transaction_log(self.pid)) if cfg.get("transaction_size") else None
        # Which transactions abort on purpose: the same draws for the same producer, run after run.
        self.draws = random.Random(zlib.crc32(self.pid.encode()))
        self.counts = {"sent": 0, "ok": 0, "fail": 0, "info": 0}
        self.acked_to: dict[int, int] = {}  # partition -> highest acknowledged offset
        self.pending: dict[int, tuple[int, int]] = {}  # seq -> (send_ms, key index)
        self.lock = threading.Lock()
        self.broken: str | None = None
        self.unwritten: list[str] = []  # settled rows, written after each group of answers
        self.client = BACKENDS[cfg["client"]](cfg, self._settle, self._write_settled, self._client_failed)
        self.partitions = self.client.partition_count(self.topic, cfg["bootstrap_timeout_ms"] / 1000)
        if not self.partitions:
            raise SystemExit(f"producer {self.pid}: topic {self.topic!r} has no partitions visible")
        # Keys cycle over cfg["keys"]: each key's partition is computed once.
        self.keys = [(f"k{i}", clients.partition_for(f"k{i}", self.partitions)) for i in range(cfg["keys"])]
        self.key_bytes = [k.encode() for k, _ in self.keys]
        self.pid_json, self.topic_json, self.dc_json = json.dumps(self.pid), json.dumps(self.topic), json.dumps(self.dc)
        self.cluster = cfg.get("cluster")  # a replicated stack's cluster it writes to (None: the only one)
        self.tail = "}\n" if self.cluster is None else f',"cluster":{json.dumps(self.cluster)}}}\n'
        # Fsync'd before each block of sends: a killed producer's unfinished records become info
        # rows (DrillRecord.recover_in_flight), not phantoms.
        self.intents = IntentLog(
            run.intents(self.pid),
            {
                "producer_id": self.pid,
                "topic": self.topic,
                "dc": self.dc,
                "cluster": self.cluster,
                "keys": [k for k, _ in self.keys],
                "partitions": [p for _, p in self.keys],
                "client": cfg["client"],
                "client_settings": self.client.settings,
            },
        )

    # -- outcomes (called back from the client's thread: kafka-python's I/O thread, or ours) -----
    def _settle(self, seq: int, status: str, offset: int | None, error: str | None) -> None:
        if status == "ok" and (offset is None or offset < 0):
            # acks=0: the client hears nothing back (its offset is -1), so nothing was acknowledged.
            status, offset, error = "info", None, "acks=0: sent, with no acknowledgement and no offset"
        with self.lock:
            sent = self.pending.pop(seq, None)
            if sent is None:
                return
            self.counts[status] += 1
            send_ms, k = sent
            key, partition = self.keys[k]
            if status == "ok" and offset > self.acked_to.get(partition, -1):
                self.acked_to[partition] = offset
        # One produced-ledger row (RECORD.md), formatted by hand: this runs once per record.
        line = (
            f'{{"producer_id":{self.pid_json},"seq":{seq},"topic":{self.topic_json},"partition":{partition},'
            f'"key":"{key}","send_ms":{send_ms},"status":"{status}","ack_ms":{now_ms()},'
            f'"offset":{"null" if offset is None else offset},'
            f'"error":{"null" if error is None else json.dumps(error)},"dc":{self.dc_json}' + self.tail
        )
        with self.lock:  # not a bare append: _write_settled swaps the list under the lock
            self.unwritten.append(line)

    def _write_settled(self) -> None:
        """The rows settled since the last call, in one write: one poll serves a batch's answers,
        and a write per row cost the answering thread a system call each. A producer killed
        before the write leaves those seqs to its intent log (info rows), as if unanswered."""
        with self.lock:
            lines, self.unwritten = self.unwritten, []
        if lines:
            self._write("".join(lines), len(lines))

    def _client_failed(self, why: str) -> None:
        """The client can no longer answer: stop sending, and exit 1 saying why."""
        self.broken = why
        self.stop.event.set()

    def _write(self, text: str, n_rows: int) -> None:
        try:
            self.ledger.write_lines(text, n_rows)
        except LedgerError as exc:
            self.broken = str(exc)
            self.stop.event.set()

    def _send(self, seq: int) -> None:
        k = seq % self.cfg["keys"]
        key, partition = self.keys[k]
        send_ms = now_ms()
        self.intents.before_send(seq, send_ms)
        # No lock on the sending path: one dict store is atomic under the GIL, and only this
        # thread counts sends. Waiting for the answering thread's lock held this thread up to a
        # fifth of its time at full speed.
        self.pending[seq] = (send_ms, k)
        self.counts["sent"] = seq + 1
        value = clients.encode_value(self.pid, seq, send_ms, self.cfg["record_size"])
        headers = clients.identity_headers(self.pid, seq, self.cluster) if self.cluster else None
        self.client.send(self.topic, self.key_bytes[k], value, partition, seq, headers)

    def _report(self, final: bool = False) -> None:
        """The status snapshot; `final` once nothing is in flight any more. `acked_to`: the highest
        offset acknowledged per partition, which the drain waits for the consumers to read."""
        with self.lock:
            snap = {
                **self.counts,
                "in_flight": len(self.pending),
                "dc": self.dc,
                "producer_id": self.pid,
                "acked_to": {clients.position_key(self.cluster, self.topic, p): o for p, o in self.acked_to.items()},
                "final": final,
            }
        self.record.write_status(self.record.status_name("producer", self.pid), snap)

    def _end_transaction(self, txn: int, first_seq: int, records: int, begin_ms: int) -> None:
        """Commit the transaction, or abort it when the draw says so (abort_fraction); its records'
        rows are written with its outcome, then its row in the transactions ledger."""
        meant = "abort" if self.draws.random() < self.cfg["abort_fraction"] else "commit"
        outcome, why = self.client.end(txn, meant == "commit", timeout_s=TRANSACTION_WAIT_S)
        row = {
            "producer_id": self.pid,
            "txn": txn,
            "first_seq": first_seq,
            "records": records,
            "outcome": outcome,
            "meant": meant,
            "error": why,
            "begin_ms": begin_ms,
            "end_ms": now_ms(),
            "dc": self.dc,
            **({"cluster": self.cluster} if self.cluster else {}),
        }
        try:
            self.transactions.write(row)
        except LedgerError as exc:
            self.broken = str(exc)
            self.stop.event.set()

    def run(self) -> int:
        cfg = self.cfg
        rate, count, size = cfg.get("rate"), cfg.get("count"), cfg.get("transaction_size")
        end = time.monotonic() + cfg["duration_s"] if cfg.get("duration_s") else None
        start = time.monotonic()
        last_report = 0.0
        seq = txn = 0
        begin_ms = first_seq = None  # the open transaction's, if any
        while not self.stop and (count is None or seq < count) and (end is None or time.monotonic() < end):
            if rate:
                ahead = start + seq / rate - time.monotonic()
                if ahead > 0:
                    if self.stop.wait(min(ahead, 0.05)):
                        break
                    continue
            if size and first_seq is None:
                self.client.begin()
                begin_ms, first_seq = now_ms(), seq
            self._send(seq)
            seq += 1
            if size and seq - first_seq == size:
                self._end_transaction(txn, first_seq, size, begin_ms)
                txn, first_seq = txn + 1, None
            if time.monotonic() - last_report > 1.0:
                self._report()
                last_report = time.monotonic()
        if first_seq is not None and seq > first_seq:  # stopped within a transaction: it ends too
            self._end_transaction(txn, first_seq, seq - first_seq, begin_ms)
        # Let in-flight records resolve within the client's effective delivery timeout, then
        # record the rest as indeterminate: never drop a row.
        self.client.flush(int(self.client.settings["delivery.timeout.ms"]) / 1000 + 5)
        self.client.close()
        with self.lock:
            leftover = list(self.pending)
        for s in leftover:
            self._settle(s, "info", None, "unresolved when the producer stopped")
        self._write_settled()
        self._report(final=True)
        try:
            self.ledger.close()
        except LedgerError as exc:
            self.broken = self.broken or str(exc)
        self.intents.close(sent=seq)
        if self.transactions is not None:
            self.transactions.close()
        if self.broken:
            print(f"producer {self.pid}: stopped sending: {self.broken}", file=sys.stderr)
            return 1
        return 0


def main(argv: list[str] | None = None) -> int:
    cfg = clients.config_from_args("python -m dcdrill.validation.producer", __doc__.split("\n\n")[0], argv)
    stop = clients.StopFlag.for_process(cfg)
    try:
        producer = SequencedProducer(cfg, stop)
    except Exception as exc:  # noqa: BLE001 - one clear line, not a trace
        if "bootstrap" in str(exc).lower() or type(exc).__name__ in ("KafkaTimeoutError", "TimeoutError"):
            print(
                f"producer {cfg['producer_id']}: no broker reachable at {', '.join(cfg['bootstrap'])} "
                f"within {cfg['bootstrap_timeout_ms']} ms",
                file=sys.stderr,
            )
            return 2
        raise
    return producer.run()


if __name__ == "__main__":
    sys.exit(main())
