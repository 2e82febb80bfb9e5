"""The final audit: after the cluster has healed, read every partition from its log start to
its end with `assign` (no group, no commits) into audit/audit.jsonl, on the drill's client
(kafka-python, or Kafka's own Java consumer for the java client), read committed after
transactions; on a replicated stack, each cluster's topics (the drill's, and MM2's remote
copies) into audit/<cluster>.jsonl, identities and origin cluster read from the records'
headers (which MM2 copies).

    python -m dcdrill.validation.audit --config JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from dcdrill.record import DrillRecord
from dcdrill.record.ledger import Ledger
from dcdrill.validation import clients, java_readers


class PartitionOffline(RuntimeError):
    pass


def run(cfg: dict) -> int:
    cluster = cfg.get("cluster")
    record = DrillRecord(cfg["run_dir"])
    ledger = Ledger(record.audit(cluster))
    try:
        for topic in cfg.get("topics") or [cfg["topic"]]:
            audit_topic(cfg, topic, ledger, {"cluster": cluster} if cluster else {})
    finally:
        ledger.close()
    # Only a whole audit is marked: the launcher writes audit-end.json from this line.
    print(json.dumps({record.audit(cluster).name: ledger.rows}), flush=True)
    return 0


def _audited(topic, partition, offset, pid, seq, timestamp, extra: dict, origin) -> dict:
    """One audit row (RECORD.md); `extra` a replicated stack's cluster, whose rows name the
    cluster whose producer wrote the record (`origin`)."""
    row = {"topic": topic, "partition": partition, "offset": offset, "producer_id": pid, "seq": seq}
    row |= {"timestamp_ms": timestamp, **extra}
    if extra:
        row["origin"] = origin
    return row


def audit_topic_java(cfg: dict, topic: str, ledger: Ledger, extra: dict) -> None:
    """The same audit on Kafka's own Java consumer (the java client's drills)."""
    rows = []
    try:
        for partition, offset, timestamp, value, pid, seq, origin in java_readers.audit_rows(
            cfg, topic, float(cfg.get("audit_timeout_s", 120))
        ):
            if pid is None or seq is None:  # a stretched stack's records carry it in the value only
                pid, seq, _ = clients.decode_value(value.encode())
            else:
                seq = int(seq) if seq.isdigit() else None
            rows.append(_audited(topic, partition, offset, pid, seq, timestamp, extra, origin))
            if len(rows) >= 5000:
                ledger.write_many(rows)
                rows = []
    except RuntimeError as exc:
        raise PartitionOffline(str(exc)) from None
    ledger.write_many(rows)


def audit_topic(cfg: dict, topic: str, ledger: Ledger, extra: dict) -> None:
    if cfg["client"] == "java":
        return audit_topic_java(cfg, topic, ledger, extra)
    from kafka import KafkaConsumer, TopicPartition

    timeout_s = float(cfg.get("audit_timeout_s", 120))
    consumer = KafkaConsumer(
        bootstrap_servers=cfg["bootstrap"],
        group_id=None,
        enable_auto_commit=False,
        client_id="dcdrill-audit",
        bootstrap_timeout_ms=int(cfg["bootstrap_timeout_ms"]),
        request_timeout_ms=30000,
        max_poll_records=5000,
        fetch_max_bytes=50 * 1024 * 1024,
        # the log as a read_committed consumer sees it: committed transactions' records only
        isolation_level="read_committed" if cfg.get("transaction_size") else "read_uncommitted",
        **clients.resolve_security(cfg),
    )
    parts = None
    deadline = time.monotonic() + timeout_s
    while not parts and time.monotonic() < deadline:
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            time.sleep(1)
    if not parts:
        raise PartitionOffline(f"topic {topic!r} not found within {timeout_s:.0f}s")
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    start, end = _offsets(consumer, tps, deadline)
    consumer.seek_to_beginning(*tps)
    remaining = {tp for tp in tps if end[tp] > start[tp]}
    last_progress = {tp: time.monotonic() for tp in tps}
    while remaining:
        batch = consumer.poll(timeout_ms=1000)
        rows = []
        for tp, records in batch.items():
            for r in records:
                if r.offset >= end[tp]:
                    continue
                pid, seq, origin = clients.identity_from_headers(r.headers)
                if pid is None or seq is None:  # a stretched stack's records carry it in the value only
                    pid, seq, _ = clients.decode_value(r.value)
                rows.append(_audited(tp.topic, tp.partition, r.offset, pid, seq, r.timestamp, extra, origin))
            last_progress[tp] = time.monotonic()
        ledger.write_many(rows)
        for tp in list(remaining):
            if consumer.position(tp) >= end[tp]:
                remaining.discard(tp)
            elif time.monotonic() - last_progress[tp] > timeout_s:
                raise PartitionOffline(
                    f"partition {tp.topic}-{tp.partition} made no progress for {timeout_s:.0f}s "
                    f"(at {consumer.position(tp)} of {end[tp]}): is it offline?"
                )
    consumer.close()


def _offsets(consumer, tps, deadline):
    while True:
        try:
            return consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        except Exception as exc:  # noqa: BLE001 - a partition without a leader times out here
            if time.monotonic() > deadline:
                raise PartitionOffline(
                    f"cannot read log start/end offsets of {tps[0].topic}: {exc} (a partition is probably offline)"
                ) from exc
            time.sleep(2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dcdrill.validation.audit", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="JSON settings written by validation/workload.py")
    try:
        return run(clients.become_agent(json.loads(p.parse_args(argv).config)))
    except PartitionOffline as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
