"""The `java` producer backend: Kafka's own Java client, in a JVM this process starts
(validation/jvm/ProducerBridge.java, compiled on the control and shipped in the agents' bundle).
The Python producer keeps the sequencing, the intent log and the ledger as for the other
backends; every answer the ledger keeps is the Java client's. Settings the spec leaves as None
are the client's own defaults (idempotent, acks=all, retries without end, a two-minute delivery
timeout); the effective ones come back from the client and go into the intent log's header.
The JVM's command line and the properties its programs share are here too; java_readers.py has
the consumer and the audit.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dcdrill.validation import clients, outcomes

JVM = Path(__file__).parent / "jvm"
JAR = JVM / "dcdrill-workload.jar"  # infra/agent_runtime.JAVA_WORKLOAD_JAR, in the bundle
MAIN = "dcdrill.ProducerBridge"
# A small heap and C1 only: the JVM forwards records, and starts in a second on a busy host.
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
# The spec's settings (validation/workload.py names) in the Java client's; None: not given.
SETTINGS = {
    "acks": "acks",
    "idempotence": "enable.idempotence",
    "retries": "retries",
    "delivery_timeout_ms": "delivery.timeout.ms",
    "request_timeout_ms": "request.timeout.ms",
    "linger_ms": "linger.ms",
    "batch_size": "batch.size",
    "max_in_flight": "max.in.flight.requests.per.connection",
    "bootstrap_timeout_ms": "socket.connection.setup.timeout.ms",
}
MAX_BLOCK_MS = 5000  # as kafka-python's: a send that waits longer for buffer or metadata fails


# A drill's transactions time out within its fault, so a hanging one shows before the heal.
TRANSACTION_TIMEOUT_MS = 10_000


def transactional_id(cfg: dict) -> str:
    """One per producer and topic: the shipped stacks' ACLs grant the workload `dcdrill*` ids."""
    return f"dcdrill-{cfg['topic']}-{cfg['producer_id']}"


def _escaped(value: str) -> str:
    """A value as a java.util.Properties line holds it."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + out if out[:1] in (" ", "\t") else out


def properties(cfg: dict) -> dict[str, str]:
    """The producer's Java properties: the spec's given settings, its identity and its security
    (become_agent's: a CA held in memory is passed as PEM text, never as a file the agent cannot read)."""
    out = {
        "bootstrap.servers": ",".join(cfg["bootstrap"]),
        "client.id": f"dcdrill-{cfg['producer_id']}",
        "max.block.ms": str(MAX_BLOCK_MS),
    }
    if cfg.get("transaction_size"):  # a transactional producer: an id of its own, a short timeout
        out["transactional.id"] = transactional_id(cfg)
        out["transaction.timeout.ms"] = str(TRANSACTION_TIMEOUT_MS)
    for ours, theirs in SETTINGS.items():
        if cfg.get(ours) is not None:
            v = cfg[ours]
            out[theirs] = str(v).lower() if isinstance(v, bool) else str(v)
    return out | clients.java_security(cfg.get("security") or {})


def block(props: dict[str, str]) -> str:
    return "".join(f"{k}={_escaped(v)}\n" for k, v in sorted(props.items())) + "\n"


def command(cfg: dict, main: str = MAIN) -> list[str]:
    """The JVM's argv: no setting and no secret in it (they go on its stdin)."""
    if not JAR.is_file():
        why = JVM / "UNAVAILABLE.txt"  # infra/agent_runtime.JAVA_UNAVAILABLE
        said = why.read_text().strip() if why.is_file() else "this host's dcdrill bundle lacks it"
        raise RuntimeError(f"no Java workload program at {JAR}: {said}")
    libs = cfg.get("kafka_libs")
    if not libs:
        raise RuntimeError("the java client needs kafka_libs: the folder of this host's Kafka jars")
    return [
        "java",
        *JVM_OPTIONS,
        f"-Dlog4j.configuration=file:{JVM / 'log4j.properties'}",
        f"-Dlog4j2.configurationFile={JVM / 'log4j2.properties'}",
        "-cp",
        f"{JAR}:{libs}/*",
        main,
        # unread by the program: heal finds the process by its record folder (host_process.stop)
        os.path.abspath(cfg["run_dir"]),
    ]


class JavaClient:
    def __init__(self, cfg: dict, settle, answered, on_failure: Callable[[str], None]):
        self.settle, self.answered, self.on_failure = settle, answered, on_failure
        self.proc = subprocess.Popen(command(cfg), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._write(block(properties(cfg)))
        self._pending = b""
        self._partitions: queue.Queue[str] = queue.Queue()
        self._flushed = threading.Event()
        self._closing = False
        # A transaction's records are answered once its outcome is known (end): seq -> answer.
        self.transactional = bool(cfg.get("transaction_size"))
        self._in_transaction: list[int] = []
        self._answered_in_transaction: dict[int, list[str]] = {}
        self._ended: queue.Queue[list[str]] = queue.Queue()
        first = self._next_line(timeout_s=120)
        if not first.startswith("i"):
            raise RuntimeError(f"the Java producer did not start (it said {first!r}; see its log)")
        self.settings = dict(f.split("=", 1) for f in first.split("\t")[1:])
        self.retries = int(self.settings.get("retries", "0"))
        self._reader = threading.Thread(target=self._serve_answers, daemon=True, name="java answers")
        self._reader.start()

    def _write(self, text: str) -> None:
        self.proc.stdin.write(text.encode())

    def _next_line(self, timeout_s: float) -> str:
        """One line before the reader thread starts (the effective settings)."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending and time.monotonic() < deadline:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")

    def _serve_answers(self) -> None:
        fd = self.proc.stdout.fileno()
        try:
            while True:
                lines, _, self._pending = self._pending.rpartition(b"\n")
                settled = False
                for line in lines.split(b"\n") if lines else ():
                    settled |= self._answer(line.decode(errors="replace").split("\t"))
                if settled:
                    self.answered()
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                self._pending += chunk
        except BaseException as exc:  # an answer we cannot serve: nothing more would be recorded
            self.on_failure(f"serving the Java client's answers failed: {type(exc).__name__}: {exc}")
            raise
        if not self._closing:
            self.on_failure(f"the Java producer exited (code {self.proc.wait()}; see its log)")
        self._flushed.set()

    def _answer(self, f: list[str]) -> bool:
        if self.transactional and f[0] in ("a", "e"):
            self._answered_in_transaction[int(f[1])] = f
            return False
        if f[0] == "t":
            self._ended.put(f[1:])
            return False
        if f[0] == "a":
            self.settle(int(f[1]), "ok", int(f[2]), None)
            return True
        if f[0] == "e":
            cls, why = f[2], f[3] if len(f) > 3 else ""
            status = outcomes.classify_java(cls, why, self.retries)
            self.settle(int(f[1]), status, None, f"{cls.rsplit('.', 1)[-1]}: {why}"[:300])
            return True
        if f[0] == "n":
            self._partitions.put("\t".join(f[1:]))
        elif f[0] == "f":
            self._flushed.set()
        return False

    def partition_count(self, topic: str, timeout_s: float) -> int:
        deadline, why = time.monotonic() + timeout_s, ""
        while time.monotonic() < deadline:
            self._write(f"p\t{topic}\n")
            count, _, why = self._partitions.get(timeout=MAX_BLOCK_MS / 1000 + 30).partition("\t")
            if int(count) > 0:
                return int(count)
            time.sleep(0.5)
        raise TimeoutError(f"Unable to bootstrap: {why}")

    def send(self, topic: str, key: bytes, value: bytes, partition: int, seq: int, headers=None) -> None:
        extra = "".join(f"\t{name}={v.decode()}" for name, v in headers or ())
        if self.transactional:
            self._in_transaction.append(seq)
        try:
            self._write(f"s\t{seq}\t{partition}\t{topic}\t{key.decode()}\t{value.decode()}{extra}\n")
        except OSError as exc:  # the JVM is gone: the record stays unanswered (info at the end)
            self.on_failure(f"the Java producer is gone: {exc}")

    def begin(self) -> None:
        self._in_transaction, self._answered_in_transaction = [], {}
        self._write("b\n")

    def end(self, txn: int, commit: bool, timeout_s: float) -> tuple[str, str | None]:
        """Commit (or abort) the open transaction, then settle each of its records by its outcome:
        committed: as the client answered it; aborted: `fail` (a read_committed reader never sees
        it); unknown: `info`. Returns (outcome, why)."""
        self._write(f"{'c' if commit else 'x'}\t{txn}\n")
        deadline, outcome, why = time.monotonic() + timeout_s, "unknown", "no answer in time"
        while time.monotonic() < deadline:
            try:
                answer = self._ended.get(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                if self.proc.poll() is not None:
                    why = "the Java producer exited"
                    break
                continue
            if answer[0] == str(txn):  # an answer of an earlier transaction came late: not this one's
                outcome, why = answer[1], answer[2] if len(answer) > 2 else None
                break
        for seq in self._in_transaction:
            f = self._answered_in_transaction.get(seq)
            if outcome == "committed" and f is not None and f[0] == "a":
                self.settle(seq, "ok", int(f[2]), None)
            elif outcome == "aborted":
                self.settle(seq, "fail", None, (f"transaction {txn} aborted" + (f": {why}" if why else ""))[:300])
            else:
                self.settle(seq, "info", None, f"transaction {txn} {outcome}: {why}"[:300])
        self.answered()
        return outcome, why

    def flush(self, timeout_s: float) -> None:
        self._flushed.clear()
        try:
            self._write("f\n")
        except OSError:
            return
        self._flushed.wait(timeout_s)

    def close(self) -> None:
        self._closing = True
        try:
            self.proc.stdin.close()  # the JVM closes its producer, answers what is left, exits
        except OSError:
            pass
        self._reader.join(15)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
