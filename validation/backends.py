"""Producer clients behind one small interface, so the same sequencing and ledger run on either
(`send` takes optional record headers: a list of (name, bytes)):

* `confluent` (default): confluent-kafka (librdkafka in C); a thread of ours serves its callbacks
  as they come. It costs a fraction of kafka-python's CPU per record, and is faster flat out
  (docs/benchmarks.md: tests/benchmarks/quiet_lab.py and workload_vs_perftest.py measure both).
* `kafka-python`: pure Python, its own I/O thread calls back.
* `java`: Kafka's own Java client, in a JVM of its own (validation/java_client.py).

Each keeps `settings`: its effective producer settings (no secret), which the intent log's header
records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial

from dcdrill.infra.constants import KAFKA_PYTHON_ACKS
from dcdrill.validation import clients, outcomes
from dcdrill.validation.java_client import JavaClient

# settle(seq, status, offset, error): status ok | fail | info; called once per record.
Settle = Callable[[int, str, "int | None", "str | None"], None]
# answered(): called after a group of settle calls (one poll's answers): their rows are written then.
Answered = Callable[[], None]


class KafkaPythonClient:
    def __init__(self, cfg: dict, settle: Settle, answered: Answered, on_failure: Callable[[str], None]):
        # on_failure: the confluent client's; kafka-python's own I/O thread has no such failure
        from kafka import KafkaProducer

        self.settle, self.answered = settle, answered
        self.retries = int(cfg["retries"])
        self.p = KafkaProducer(
            bootstrap_servers=cfg["bootstrap"],
            client_id=f"dcdrill-{cfg['producer_id']}",
            acks=KAFKA_PYTHON_ACKS[str(cfg["acks"])],
            retries=self.retries,
            enable_idempotence=bool(cfg["idempotence"]),
            delivery_timeout_ms=int(cfg["delivery_timeout_ms"]),
            request_timeout_ms=int(cfg["request_timeout_ms"]),
            linger_ms=int(cfg["linger_ms"]),
            **({} if cfg.get("batch_size") is None else {"batch_size": int(cfg["batch_size"])}),
            max_block_ms=5000,
            bootstrap_timeout_ms=int(cfg["bootstrap_timeout_ms"]),
            max_in_flight_requests_per_connection=int(cfg["max_in_flight"]),
            **clients.resolve_security(cfg),
        )
        import kafka

        # Its own config as it resolved it, in the Java client's names (kafka-python's, dotted).
        resolved = {name.replace("_", "."): self.p.config[name] for name in KAFKA_PYTHON_REPORTED}
        self.settings = {"client.version": f"kafka-python {kafka.__version__}", **_as_text(resolved)}

    def partition_count(self, topic: str, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            parts = self.p.partitions_for(topic)
            if parts:
                return len(parts)
        return 0

    def send(self, topic: str, key: bytes, value: bytes, partition: int, seq: int, headers=None) -> None:
        try:
            fut = self.p.send(topic, key=key, value=value, partition=partition, headers=headers)
        except Exception as exc:  # noqa: BLE001 - raised before the record left the client
            self.settle(seq, "fail" if "metadata" in str(exc).lower() else "info", None, outcomes.describe(exc))
            self.answered()
            return
        fut.add_callback(self._ok, seq)
        fut.add_errback(self._err, seq)

    def _ok(self, seq: int, metadata) -> None:  # its I/O thread calls back one record at a time
        self.settle(seq, "ok", metadata.offset, None)
        self.answered()

    def _err(self, seq: int, exc: BaseException) -> None:
        self.settle(seq, outcomes.classify(exc, self.retries), None, outcomes.describe(exc))
        self.answered()

    def flush(self, timeout_s: float) -> None:
        self.p.flush(timeout=timeout_s)

    def close(self) -> None:
        self.p.close(timeout=5)


def librdkafka_settings(cfg: dict) -> dict:
    """The workload's producer settings (validation/workload.py's names) in librdkafka's."""
    return {
        "bootstrap.servers": ",".join(cfg["bootstrap"]),
        "client.id": f"dcdrill-{cfg['producer_id']}",
        "acks": {"all": "all", "1": "1", "0": "0"}[str(cfg["acks"])],
        "retries": int(cfg["retries"]),
        "enable.idempotence": bool(cfg["idempotence"]),
        "delivery.timeout.ms": int(cfg["delivery_timeout_ms"]),
        "request.timeout.ms": int(cfg["request_timeout_ms"]),
        "linger.ms": int(cfg["linger_ms"]),
        **({} if cfg.get("batch_size") is None else {"batch.size": int(cfg["batch_size"])}),
        "max.in.flight": int(cfg["max_in_flight"]),
        "socket.connection.setup.timeout.ms": int(cfg["bootstrap_timeout_ms"]),
        # librdkafka leaves Nagle on; Kafka's Java client and kafka-python turn it off. Off
        # here too, so that no client holds a small request back for a TCP ack.
        "socket.nagle.disable": True,
        **clients.librdkafka_security(cfg.get("security") or {}),
    }


# The settings the record keeps (no security setting: a password is one).
REPORTED = (
    "acks",
    "enable.idempotence",
    "retries",
    "delivery.timeout.ms",
    "request.timeout.ms",
    "linger.ms",
    "batch.size",
    "max.in.flight",
    "socket.connection.setup.timeout.ms",
)


KAFKA_PYTHON_REPORTED = (
    "acks",
    "enable_idempotence",
    "retries",
    "delivery_timeout_ms",
    "request_timeout_ms",
    "linger_ms",
    "batch_size",
    "max_in_flight_requests_per_connection",
)


def _as_text(settings: dict) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}


class ConfluentClient:
    def __init__(self, cfg: dict, settle: Settle, answered: Answered, on_failure: Callable[[str], None]):
        from confluent_kafka import Producer

        self.settle, self.answered, self.on_failure = settle, answered, on_failure
        self.retries = int(cfg["retries"])
        import confluent_kafka

        version = f"librdkafka {confluent_kafka.libversion()[0]}"
        self.settings = {
            "client.version": version,
            **_as_text({k: v for k, v in librdkafka_settings(cfg).items() if k in REPORTED}),
        }
        self.p = Producer(librdkafka_settings(cfg))
        self.bootstrap_timeout_s = cfg["bootstrap_timeout_ms"] / 1000
        # librdkafka's answers wait for a poll, and the ledger's ack_ms is when the callback runs
        # (Message.latency() too is measured then). So one thread blocks in poll() and serves
        # each answer as it arrives (a poll every so many sends would add its wait to every
        # latency). One poll serves a whole batch's answers; their rows go to the ledger in one
        # write after it.
        self._closing = threading.Event()
        self._poller = threading.Thread(target=self._serve_answers, daemon=True, name="delivery reports")
        self._poller.start()

    def _serve_answers(self) -> None:
        try:
            while not self._closing.is_set():
                if self.p.poll(0.1):
                    self.answered()
        except BaseException as exc:  # a callback raised: no answer would ever be served again
            self.on_failure(f"serving librdkafka's answers failed: {type(exc).__name__}: {exc}")
            raise

    def partition_count(self, topic: str, timeout_s: float) -> int:
        try:
            md = self.p.list_topics(topic, timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001
            raise TimeoutError(f"Unable to bootstrap: {exc}") from None
        t = md.topics.get(topic)
        return len(t.partitions) if t is not None and t.error is None else 0

    def _delivered(self, seq: int, err, msg) -> None:
        if err is None:
            self.settle(seq, "ok", msg.offset(), None)
        else:
            self.settle(seq, outcomes.classify_librdkafka(err, self.retries), None, f"{err.name()}: {err.str()}"[:300])

    def send(self, topic: str, key: bytes, value: bytes, partition: int, seq: int, headers=None) -> None:
        delivered = partial(self._delivered, seq)
        while True:
            try:
                self.p.produce(topic, value=value, key=key, partition=partition, on_delivery=delivered, headers=headers)
                return
            except BufferError:  # local queue full: serve callbacks, then retry the same record
                if self.p.poll(0.05):
                    self.answered()

    def flush(self, timeout_s: float) -> None:
        self.p.flush(timeout_s)  # waits for the answers (either thread may serve the last ones)
        self.answered()

    def close(self) -> None:
        self._closing.set()
        self._poller.join(timeout=1)
        self.p.flush(0)
        self.answered()


BACKENDS = {"kafka-python": KafkaPythonClient, "confluent": ConfluentClient, "java": JavaClient}
