"""acks=1 records acknowledged while fewer than min.insync replicas survive a DC's loss: unread
until the DC is back, on Kafka 3.9 (ZooKeeper) as on 4.3 (KRaft, eligible leader replicas). Since
3.7 (KAFKA-15583) the leader advances the high watermark only while the ISR holds min.insync
replicas, with or without ELR.

For each stack (`local`: 3.9 on ZooKeeper; `local-kraft`: 4.3.1 on KRaft, formatted by 4.3, so
ELR is on), a project of its own gets the stack with producer acks=1 and min.insync.replicas 3
(`consistency-acks` accepted: a consistency-first stack refuses acks=1 otherwise), and one
`kill-dc` of dc-a runs on it (`dcdrill drill`). Losing dc-a leaves 2 of the 4 replicas, fewer than
min.insync: `dcdrill plan` predicts writes go on and stay UNREAD both times.

What "read" means here is the high watermark: beside the drill, this script asks the cluster for
the drill topic's end offsets (ListOffsets, what a consumer may read up to) every second, from
outside any group. The drill's own consumers cannot show it: they commit after each batch, and
with min.insync 3 their commits wait for replicas that are gone, so they stall either way. The
script prints, for the fault window (from 25 s after its start, once leaders have failed over, to
the heal), the records acknowledged and how far the high watermark moved, and from the record,
how many acknowledged records a consumer read before the heal. One lab at a time; each is
brought down after its drill.

ListOffsets may go unanswered for the whole window: a new leader whose high watermark has not
reached its epoch's start answers nothing (KIP-207). So the script also reads the brokers' own
record of it, each surviving broker's `replication-offset-checkpoint` (the high watermark of every
replica it holds, written every 5 s), over host access every 2 s, and prints how far the highest
checkpointed high watermark of each drill partition moved in the same window.

    python tests/benchmarks/elr_visibility.py [--hold 60] [--stack local] [--out runs/elr-visibility]
    python tests/benchmarks/elr_visibility.py --table-only --out runs/elr-visibility
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from client_namespace import enter_client_namespace  # noqa: E402 - a sibling module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dcdrill.record.ledger import read  # noqa: E402
from tests.benchmarks import variant  # noqa: E402

STACKS = ("local", "local-kraft")


def acks_1_min_insync_3(cfg: dict) -> None:
    cfg["dcdrill:cluster"].setdefault("producer", {})["acks"] = "1"
    cfg["dcdrill:cluster"]["replication"]["minInsync"] = 3
    cfg["dcdrill:acceptRisks"] = sorted(set(cfg.get("dcdrill:acceptRisks", [])) | {"consistency-acks"})


class WindowMoves:
    """A watch's samples, {partition: [(ms, high watermark), ...]}, read over a time window."""

    samples: dict

    def moves(self, start_ms: int, end_ms: int) -> list[int]:
        """How far each partition's high watermark moved within [start_ms, end_ms), for the
        partitions sampled at least twice in it. A partition whose leader was just elected may
        answer nothing: its new leader has no high watermark to give yet (KIP-207), and gets none
        while the ISR is below min.insync (KAFKA-15583)."""
        return [
            inside[-1] - inside[0]
            for s in self.samples.values()
            if len(inside := [v for t, v in s if start_ms <= t < end_ms]) >= 2
        ]

    def visible(self, start_ms: int, end_ms: int) -> bool | None:
        """Whether any partition's high watermark moved in the window: the drill's load writes to
        every partition, so a high watermark that follows the writes moves on each. None when no
        partition was sampled twice in the window."""
        moves = self.moves(start_ms, end_ms)
        return any(moves) if moves else None

    def moved(self, start_ms: int, end_ms: int) -> str | None:
        """The moves summed, and how many partitions were sampled."""
        moves = self.moves(start_ms, end_ms)
        return f"{sum(moves)} ({len(moves)} of {len(self.samples)} partitions)" if moves else None


class WatermarkWatch(WindowMoves, threading.Thread):
    """The drill topic's end offsets, per partition, about once a second, while the drill runs.
    Asked one partition at a time by a sampler thread with a client of its own, a fresh one after
    any failure: kafka-python keeps asking a dead leader until its metadata expires. A client can
    also hang for a minute or more on a dead DC's brokers, so a sampler silent for STALL_S is left
    behind and a new one started (each joins the client host's namespace: setns moves one thread)."""

    STALL_S = 15.0  # a client's bootstrap on a saturated lab (TLS, SCRAM) can take several seconds

    def __init__(self, stack: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.samples, self.done, self.errors = stack, {}, threading.Event(), {}
        self.beat, self.generation, self.samplers = time.monotonic(), 0, 0

    def run(self) -> None:
        while not self.done.is_set():
            if self.generation == 0 or time.monotonic() - self.beat > self.STALL_S:
                self.generation += 1
                self.samplers += 1
                self.beat = time.monotonic()
                threading.Thread(target=self._sample, args=(self.generation,), daemon=True).start()
            self.done.wait(1.0)

    def _sample(self, generation: int) -> None:
        from kafka import KafkaConsumer, TopicPartition

        from dcdrill.infra import lifecycle
        from dcdrill.infra.constants import CANARY_TOPIC, DRILL_TOPIC_PREFIX

        consumer = None
        while not self.done.wait(1.0) and generation == self.generation:
            try:
                if consumer is None:
                    # The lab may be coming up, or have been rebuilt since: its inventory and its
                    # namespace are read again, and joined again, for each new client.
                    inv = lifecycle.inventory(self.stack)
                    enter_client_namespace(inv)  # a client host's view (the control dials nothing)
                    consumer = KafkaConsumer(
                        bootstrap_servers=inv.bootstrap_servers(),
                        request_timeout_ms=3000,
                        **inv.client_security(admin=True),
                    )
                topics = [t for t in consumer.topics() if t.startswith(DRILL_TOPIC_PREFIX) and t != CANARY_TOPIC]
            except Exception as exc:  # noqa: BLE001 - not up yet, or no broker answers: try again
                self.errors[type(exc).__name__] = str(exc)[:200]
                consumer = None
                continue
            finally:  # a call that returned, even with an error, is no stall
                self.beat = time.monotonic()
            failed = False
            for tp in (TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())):
                try:
                    end = consumer.end_offsets([tp])[tp]
                except Exception as exc:  # noqa: BLE001 - no leader now, or a dead one in stale metadata
                    self.errors[type(exc).__name__] = str(exc)[:200]
                    failed = True
                    continue
                finally:
                    self.beat = time.monotonic()
                if generation == self.generation:
                    self.samples.setdefault(tp, []).append((int(time.time() * 1000), end))
            if failed:  # next round: fresh metadata (the client would keep asking the dead leader)
                consumer.close()
                consumer = None


class CheckpointWatch(WindowMoves, threading.Thread):
    """The surviving brokers' checkpointed high watermarks of the drill topic, every 2 s: per
    partition, the highest any of them holds (a follower's is at most its leader's)."""

    def __init__(self, stack: str, lost_dc: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.lost_dc, self.done = stack, lost_dc, threading.Event()
        self.samples: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.errors: dict[str, str] = {}

    def run(self) -> None:
        from dcdrill.infra import lifecycle
        from dcdrill.infra.constants import CANARY_TOPIC, DRILL_TOPIC_PREFIX
        from dcdrill.infra.observe import hostaccess

        while not self.done.wait(2.0):
            try:
                inv = lifecycle.inventory(self.stack)
            except Exception as exc:  # noqa: BLE001 - not up yet
                self.errors[type(exc).__name__] = str(exc)[:200]
                continue
            now, highest = int(time.time() * 1000), {}
            for host in (h for h in inv.brokers if h.dc != self.lost_dc):
                path = f"{host.vars['data_root']}/kafka/data/replication-offset-checkpoint"
                try:
                    text = hostaccess.run(inv, host, ["cat", path], timeout_s=10)
                except Exception as exc:  # noqa: BLE001 - a host that does not answer this time
                    self.errors[type(exc).__name__] = str(exc)[:200]
                    continue
                for line in text.splitlines()[2:]:  # version, count, then `topic partition offset`
                    topic, partition, offset = line.split()
                    if topic.startswith(DRILL_TOPIC_PREFIX) and topic != CANARY_TOPIC:
                        key = (topic, int(partition))
                        highest[key] = max(highest.get(key, -1), int(offset))
            for key, offset in highest.items():
                self.samples.setdefault(key, []).append((now, offset))


def jsonl(folder: Path):
    for path in sorted(folder.glob("*.jsonl")):
        yield from read(path)[0]


FAILOVER_MS = 25_000  # leaders of the lost DC's partitions have failed over by then (ZooKeeper: an 18 s session)


def _seen(watch: WatermarkWatch | None, checkpoints: CheckpointWatch | None, start_ms: int, end_ms: int) -> bool | None:
    """Whether the high watermark moved in the window: ListOffsets' answers, else the brokers'
    checkpoints (None: neither had two samples of a partition in it)."""
    for source in (watch, checkpoints):
        if source is not None and (seen := source.visible(start_ms, end_ms)) is not None:
            return seen
    return None


def row(stack: str, run: Path, watch: WatermarkWatch | None, checkpoints: CheckpointWatch | None = None) -> dict:
    fault = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines() if line.strip()][-1]
    start, end = fault["start_ms"], fault["end_ms"]
    settled_acks = sum(
        1 for r in jsonl(run / "produced") if r["status"] == "ok" and start + FAILOVER_MS <= r["ack_ms"] < end
    )
    acked = {
        (r["producer_id"], r["seq"]): r["ack_ms"]
        for r in jsonl(run / "produced")
        if r["status"] == "ok" and start <= r["ack_ms"] < end
    }
    first_read: dict = {}
    for c in jsonl(run / "consumed"):
        key = (c["producer_id"], c["seq"])
        if key in acked:
            first_read[key] = min(first_read.get(key, c["consume_ms"]), c["consume_ms"])
    before_heal = [k for k, t in first_read.items() if t < end]
    delays = [first_read[k] - acked[k] for k in first_read]
    topo = json.loads((run / "topology.json").read_text())
    predicted = topo["predictions"][fault["target"]]
    summary = json.loads((run / "report" / "summary.json").read_text())
    return {
        "stack": stack,
        "kafka": topo["kafka_version"],
        "elr": topo.get("eligible_leader_replicas"),
        "predicted_visible": predicted.get("visible"),
        "held_s": (end - start) / 1000,
        "acked_during": len(acked),
        "acked_after_failover": settled_acks,
        "hw_moved_after_failover": watch.moved(start + FAILOVER_MS, end) if watch else None,
        "checkpointed_hw_moved": checkpoints.moved(start + FAILOVER_MS, end) if checkpoints else None,
        "as_predicted": (
            None
            if (seen := _seen(watch, checkpoints, start + FAILOVER_MS, end)) is None
            else seen == predicted.get("visible")
        ),
        "read_before_heal": len(before_heal),
        "read_at_all": len(first_read),
        "median_ack_to_read_s": round(statistics.median(delays) / 1000, 1) if delays else None,
        "verdict": summary["verdict"],
        "acked_lost": summary["counts"]["acked_lost"],
    }


def print_table(rows: list[dict]) -> None:
    cols = [
        "stack",
        "kafka",
        "elr",
        "predicted_visible",
        "held_s",
        "acked_during",
        "acked_after_failover",
        "hw_moved_after_failover",
        "checkpointed_hw_moved",
        "as_predicted",
        "read_before_heal",
        "median_ack_to_read_s",
        "acked_lost",
        "verdict",
    ]
    table = [[str(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(cols, *table)]
    for line in [cols] + table:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(line, widths)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hold", type=float, default=60.0, help="seconds the fault is held")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "elr-visibility")
    ap.add_argument("--table-only", action="store_true", help="read the records already in --out")
    ap.add_argument("--stack", action="append", choices=STACKS, help="one of the stacks (default: both)")
    args = ap.parse_args()
    stacks = args.stack or list(STACKS)
    args.out = args.out.resolve()
    dcdrill = str(Path(sys.executable).with_name("dcdrill"))
    watches: dict[str, WatermarkWatch] = {}
    checkpoints: dict[str, CheckpointWatch] = {}
    for stack in stacks if not args.table_only else ():
        os.environ["DCDRILL_PROJECT"] = str(variant.project_with(stack, f"dcdrill-elr-{stack}-", acks_1_min_insync_3))
        for other in STACKS:
            subprocess.run([dcdrill, "lab", "down", "--stack", other], check=True)
        watches[stack] = WatermarkWatch(stack)
        watches[stack].start()
        checkpoints[stack] = CheckpointWatch(stack, "dc-a")
        checkpoints[stack].start()
        try:
            subprocess.run(
                [
                    dcdrill,
                    "drill",
                    "--stack",
                    stack,
                    "--experiment",
                    "kill-dc",
                    "--dc",
                    "dc-a",
                    "--hold",
                    str(args.hold),
                    "--run-dir",
                    str(args.out / stack),
                ]
            )
        finally:
            watches[stack].done.set()
            checkpoints[stack].done.set()
            (args.out / stack).mkdir(parents=True, exist_ok=True)  # the raw samples, to read again
            (args.out / stack / "watermarks.json").write_text(
                json.dumps({f"{tp.topic}-{tp.partition}": s for tp, s in watches[stack].samples.items()})
            )
            (args.out / stack / "checkpointed-watermarks.json").write_text(
                json.dumps({f"{t}-{p}": s for (t, p), s in checkpoints[stack].samples.items()})
            )
            subprocess.run([dcdrill, "lab", "down", "--stack", stack], check=True)
    for stack, w in watches.items():
        print(
            f"{stack}: {sum(map(len, w.samples.values()))} watermark samples, {w.samplers} samplers "
            f"(a new one after each stall); errors seen: {w.errors or 'none'}"
        )
    for stack, c in checkpoints.items():
        print(
            f"{stack}: {sum(map(len, c.samples.values()))} checkpointed watermark samples; errors seen: "
            f"{c.errors or 'none'}"
        )
    rows = [
        row(stack, args.out / stack, watches.get(stack), checkpoints.get(stack))
        for stack in stacks
        if (args.out / stack / "report" / "summary.json").exists()
    ]
    print(f"\nkill-dc dc-a, acks=1, min.insync.replicas 3 (2 of 4 replicas survive), {args.hold:g} s hold:")
    print_table(rows)


if __name__ == "__main__":
    main()
