"""The java client's readers: a group member (ConsumerBridge.java) and the final audit
(AuditBridge.java) on Kafka's own Java consumer, for validation/consumer.py and audit.py. Read
committed after transactions; the rest the client's own defaults.
"""

from __future__ import annotations

import os
import select
import subprocess

from dcdrill.validation.clients import java_security
from dcdrill.validation.java_client import block, command

CONSUMER_MAIN, AUDIT_MAIN = "dcdrill.ConsumerBridge", "dcdrill.AuditBridge"


def consumer_properties(cfg: dict) -> dict[str, str]:
    """A group member's Java properties: the group, rack and fetch sizes the workload sets, the
    rest the client's own defaults (its session timeout among them)."""
    return {
        "bootstrap.servers": ",".join(cfg["bootstrap"]),
        "group.id": cfg["group"],
        "client.id": f"dcdrill-{cfg['consumer_id']}",
        "auto.offset.reset": cfg.get("auto_offset_reset") or "earliest",
        **({"client.rack": cfg["dc"]} if cfg.get("dc") else {}),
        "fetch.min.bytes": str(cfg["fetch_min_bytes"]),
        "fetch.max.wait.ms": str(cfg["fetch_max_wait_ms"]),
        "max.poll.records": "1000",
        **({"isolation.level": "read_committed"} if cfg.get("transaction_size") else {}),
    } | java_security(cfg.get("security") or {})


class JavaConsumer:
    """A ConsumerBridge JVM: `lines(wait_s)` gives its answers' fields as they come, `commit()`
    lets it commit the batch it last gave, once that batch is in the ledger."""

    def __init__(self, cfg: dict):
        self.proc = subprocess.Popen(
            command(cfg, CONSUMER_MAIN), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.proc.stdin.write((block(consumer_properties(cfg)) + cfg["topic"] + "\n").encode())
        self._pending = b""

    def lines(self, wait_s: float) -> list[list[str]] | None:
        """The whole lines it wrote within `wait_s`; None once it has exited."""
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], wait_s)
        if not ready:
            return []
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        whole, _, self._pending = (self._pending + chunk).rpartition(b"\n")
        return [line.decode(errors="replace").split("\t") for line in whole.split(b"\n")] if whole else []

    def commit(self) -> None:
        self.proc.stdin.write(b"c\n")

    def close(self) -> int:
        try:
            self.proc.stdin.close()  # its end of input: it leaves the group and exits
        except OSError:
            pass
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def audit_properties(cfg: dict) -> dict[str, str]:
    """The audit's Java properties: no group; read committed after transactions."""
    return {
        "bootstrap.servers": ",".join(cfg["bootstrap"]),
        "client.id": "dcdrill-audit",
        "max.poll.records": "5000",
        "fetch.max.bytes": str(50 * 1024 * 1024),
        "isolation.level": "read_committed" if cfg.get("transaction_size") else "read_uncommitted",
    } | java_security(cfg.get("security") or {})


def audit_rows(cfg: dict, topic: str, timeout_s: float):
    """Each record of `topic` from log start to end as (partition, offset, timestamp, value,
    producer, seq, origin), read by Kafka's own consumer (AuditBridge.java); RuntimeError naming
    why when a partition cannot be read (offline)."""
    proc = subprocess.Popen(command(cfg, AUDIT_MAIN), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write((block(audit_properties(cfg)) + f"{topic}\n{int(timeout_s * 1000)}\n").encode())
    proc.stdin.close()
    ended = None
    for raw in proc.stdout:
        f = raw.decode(errors="replace").rstrip("\n").split("\t")
        if f[0] == "r":
            yield int(f[1]), int(f[2]), int(f[3]), f[4], f[5] or None, f[6] or None, f[7] or None
        else:
            ended = f
    code = proc.wait()
    if ended is None or ended[0] != "d":
        raise RuntimeError(ended[1] if ended and len(ended) > 1 else f"the Java audit exited {code}; see its log")
