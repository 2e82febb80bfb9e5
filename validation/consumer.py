"""One member of the live consumer group: records every delivery, commits after recording,
and keeps retrying through rebalances and DC loss (it never exits on a broker error).

    python -m dcdrill.validation.consumer --config JSON
"""

from __future__ import annotations

import sys
import time

from dcdrill.infra.constants import now_ms
from dcdrill.record import DrillRecord
from dcdrill.record.ledger import Ledger
from dcdrill.validation import clients, java_readers

# Rack-aware fetching (KIP-392) after a DC comes back: the leader names the restarted broker as
# this consumer's preferred read replica, while the consumer's metadata still lists that broker
# as offline. kafka-python 3.0 then drops the preferred replica and asks the leader again, without
# refreshing its metadata (the Java client refreshes it here), and loops, delivering nothing until
# metadata.max.age.ms: with the default 5 minutes, the dc-a consumer stalled for the rest of a
# kill-dc drill. Fresh metadata every 5 s ends the loop within seconds.
METADATA_MAX_AGE_MS = 5000


def _delivery(cfg: dict, topic: str, partition: int, offset: int, value: bytes | None, consume_ms: int) -> dict:
    """One consumed row (RECORD.md), the record's identity read from its value. A replicated
    stack's member names the cluster it reads."""
    pid, seq, _ = clients.decode_value(value)
    return {
        "consumer_id": cfg["consumer_id"],
        "group": cfg["group"],
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "producer_id": pid,
        "seq": seq,
        "consume_ms": consume_ms,
        "dc": cfg.get("dc"),
        **({"cluster": cfg["cluster"]} if cfg.get("cluster") else {}),
    }


def run(cfg: dict, stop: clients.StopFlag) -> int:
    if cfg["client"] == "java":
        return run_java(cfg, stop)
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    cid, dc, run = cfg["consumer_id"], cfg.get("dc"), DrillRecord(cfg["run_dir"])
    # A member failed over to another cluster (cfg["cluster"]) starts from MM2's translated
    # offsets: auto_offset_reset `none` makes a missing one an error.
    consumed = Ledger(run.consumed(cid))
    events = Ledger(run.events(cid))

    def event(kind: str, **fields) -> None:
        events.write({"consumer_id": cid, "event": kind, "ms": now_ms(), "dc": dc, **fields})

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            event("revoked", partitions=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned):
            event("assigned", partitions=sorted([tp.topic, tp.partition] for tp in assigned))

    consumer = None
    delivered = 0
    read_to: dict[str, int] = {}  # clients.position_key -> highest offset delivered: the drain's measure

    def report() -> None:
        run.write_status(
            run.status_name("consumer", cid),
            {"consumer_id": cid, "dc": dc, "delivered": delivered, "read_to": dict(read_to)},
        )

    last_report = 0.0
    while not stop:
        try:
            if consumer is None:
                consumer = KafkaConsumer(
                    bootstrap_servers=cfg["bootstrap"],
                    group_id=cfg["group"],
                    client_id=f"dcdrill-{cid}",
                    enable_auto_commit=False,
                    auto_offset_reset=cfg.get("auto_offset_reset", "earliest"),
                    client_rack=dc,
                    session_timeout_ms=10000,
                    heartbeat_interval_ms=2000,
                    request_timeout_ms=30000,
                    bootstrap_timeout_ms=int(cfg["bootstrap_timeout_ms"]),
                    max_poll_records=1000,
                    fetch_min_bytes=int(cfg["fetch_min_bytes"]),
                    fetch_max_wait_ms=int(cfg["fetch_max_wait_ms"]),
                    metadata_max_age_ms=METADATA_MAX_AGE_MS,
                    **clients.resolve_security(cfg),
                )
                consumer.subscribe([cfg["topic"]], listener=Listener())
            batch = consumer.poll(timeout_ms=500)
            rows = []
            now = now_ms()
            for tp, records in batch.items():
                for r in records:
                    rows.append(_delivery(cfg, tp.topic, tp.partition, r.offset, r.value, now))
            if rows:
                consumed.write_many(rows)  # record first, then commit: a crash redelivers, never skips
                delivered += len(rows)
                for tp, records in batch.items():
                    if records:
                        key = clients.position_key(cfg.get("cluster"), tp.topic, tp.partition)
                        read_to[key] = max(read_to.get(key, -1), records[-1].offset)
                try:
                    consumer.commit()
                except Exception as exc:  # noqa: BLE001 - a failed commit means redelivery later
                    event("commit-failed", error=f"{type(exc).__name__}: {exc}"[:300])
        except Exception as exc:  # noqa: BLE001 - keep going through DC loss
            event("error", error=f"{type(exc).__name__}: {exc}"[:300])
            if stop.wait(1.0):
                break
        if time.monotonic() - last_report > 1.0:
            report()
            last_report = time.monotonic()
    if consumer is not None:
        try:
            consumer.close(autocommit=False)
        except Exception:  # noqa: BLE001
            pass
    report()
    consumed.close()
    events.close()
    return 0


def run_java(cfg: dict, stop: clients.StopFlag) -> int:
    """The same member on Kafka's own Java consumer (validation/java_readers.JavaConsumer), with
    the client's own defaults: the ledger, events and status as above."""
    cid, dc, run = cfg["consumer_id"], cfg.get("dc"), DrillRecord(cfg["run_dir"])
    consumed, events = Ledger(run.consumed(cid)), Ledger(run.events(cid))
    member = java_readers.JavaConsumer(cfg)
    delivered, read_to, rows, last_report, said = 0, {}, [], 0.0, None

    def report() -> None:
        run.write_status(
            run.status_name("consumer", cid),
            {"consumer_id": cid, "dc": dc, "delivered": delivered, "read_to": dict(read_to)},
        )

    while not stop and (lines := member.lines(0.5)) is not None:
        for f in lines:
            if f[0] == "r":
                topic, partition, offset = f[1], int(f[2]), int(f[3])
                rows.append(_delivery(cfg, topic, partition, offset, f[4].encode(), now_ms()))
                key = clients.position_key(cfg.get("cluster"), topic, partition)
                read_to[key] = max(read_to.get(key, -1), offset)
            elif f[0] == "b":  # record first, then commit: a crash redelivers, never skips
                consumed.write_many(rows)
                delivered += len(rows)
                rows = []
                member.commit()
            elif f[0] == "v":
                partitions = sorted([t, int(p)] for t, p in (tp.rsplit(":", 1) for tp in f[2].split(",") if tp))
                events.write({"consumer_id": cid, "event": f[1], "ms": now_ms(), "dc": dc, "partitions": partitions})
            elif f[0] == "x":
                events.write({"consumer_id": cid, "event": f[1], "ms": now_ms(), "dc": dc, "error": f[2][:300]})
        if time.monotonic() - last_report > 1.0:
            report()
            last_report = time.monotonic()
    if lines is None:
        said = f"the Java consumer exited (code {member.proc.wait()}; see its log)"
    member.close()
    report()
    consumed.close()
    events.close()
    if said:
        print(f"consumer {cid}: {said}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    cfg = clients.config_from_args("python -m dcdrill.validation.consumer", __doc__.split("\n\n")[0], argv)
    return run(cfg, clients.StopFlag.for_process(cfg))


if __name__ == "__main__":
    sys.exit(main())
