"""Crash-safe JSON Lines ledgers.

Every row is written and flushed to the OS at once, so a SIGKILL of the workload loses nothing
already written (the kernel has it); fsync runs at least once a second and on close, so a
machine crash loses at most the last second. A crash can tear the last line only; readers
(the verifier) skip a torn last line and count it. A write error (disk full) or an fsync error
raises LedgerError and leaves the ledger broken: nothing more is appended after a fragment, and
callers stop sending records they could not account for.

A producer also keeps an intent log (IntentLog): before it sends seq s it has made sure, with
an fsync, that its log reserves s. After a crash, `recover_in_flight` turns every reserved seq
without a row into an `info` row, so records that reached the log but whose outcome was never
written are indeterminate, never phantoms.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
from pathlib import Path

from dcdrill.record.models import IntentHeader, Reserved, Sent, conforms, validated


class LedgerError(RuntimeError):
    pass


class DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple]) -> dict:
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise DuplicateKey(f"key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def loads(raw: bytes | str):
    """json.loads for what a record holds: an object naming a key twice is refused (DuplicateKey),
    where json.loads would keep the last value and a reader could not tell which was meant."""
    return json.loads(raw, object_pairs_hook=_unique_keys)


class Ledger:
    def __init__(self, path: Path, fsync_interval_s: float = 1.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()  # writes
        self._sync_lock = threading.Lock()  # an fsync, and closing the file under it; taken before _lock
        self._interval = fsync_interval_s
        self._last_sync = time.monotonic()
        self._closed = False
        self._dirty = False
        self.broken: str | None = None  # why the ledger refuses writes (a write or fsync error)
        self.rows = 0
        # fsync at least once a second even when writes stop: a quiet ledger is synced too.
        self._syncer = threading.Thread(target=self._sync_loop, daemon=True, name=f"fsync {self.path.name}")
        self._syncer.start()

    def _sync_loop(self) -> None:
        while True:
            time.sleep(self._interval)
            with self._sync_lock:
                with self._lock:
                    if self._closed:
                        return
                    if not self._dirty or self.broken:
                        continue
                    self._dirty = False  # a write from here on marks it dirty again
                # Outside the write lock: rows keep being appended while the disk syncs (a
                # delivery thread waiting out an fsync holds every answer behind it).
                try:
                    os.fsync(self._fd)
                except OSError as exc:  # the next write or close reports it
                    with self._lock:
                        self.broken, self._dirty = f"fsync failed: {exc.strerror or exc}", True
                    continue
                self._last_sync = time.monotonic()

    def write(self, row: dict) -> None:
        self.write_many([row])

    def write_many(self, rows: list[dict]) -> None:
        self.write_lines("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), len(rows))

    def write_lines(self, text: str, n_rows: int) -> None:
        """Append already-serialized JSON lines (each ending in a newline) in one write."""
        data = text.encode()
        with self._lock:
            if self.broken:
                raise LedgerError(f"ledger {self.path} is broken: {self.broken}")
            if self._closed:
                raise LedgerError(f"{self.path}: ledger already closed")
            try:
                view = memoryview(data)
                while view:  # one write() normally; loop on a short write
                    n = os.write(self._fd, view)
                    view = view[n:]
                self.rows += n_rows
                self._dirty = True
            except OSError as exc:
                # Part of a line may be on disk: appending after it would make it a malformed
                # line in the middle. Broken: no more rows here (recover_in_flight mends the tail).
                self.broken = f"write failed: {exc.strerror or exc}"
                raise LedgerError(f"cannot write ledger {self.path}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        with self._sync_lock, self._lock:
            if self.broken:
                raise LedgerError(f"ledger {self.path} is broken: {self.broken}")
            if not self._closed:
                try:
                    os.fsync(self._fd)
                except OSError as exc:
                    self.broken = f"fsync failed: {exc.strerror or exc}"
                    raise LedgerError(f"cannot fsync ledger {self.path}: {exc.strerror or exc}") from exc
                self._dirty = False
                self._last_sync = time.monotonic()

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._closed:
                return
            try:
                if not self.broken:
                    os.fsync(self._fd)
            except OSError as exc:
                self.broken = f"fsync failed: {exc.strerror or exc}"
            finally:
                os.close(self._fd)
                self._closed = True
            if self.broken:
                raise LedgerError(f"ledger {self.path} is broken: {self.broken}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read(path: Path) -> tuple[list[dict], bool]:
    """All rows of one ledger file, and whether a torn last line was skipped.

    A malformed line anywhere but the last is an error naming the file and line number.
    """
    return parse(Path(path).read_bytes(), str(path))


def parse(data: bytes, name: str) -> tuple[list[dict], bool]:
    """`read` on a file's bytes (`name` is what errors call the file)."""
    rows, torn = [], False
    lines = data.split(b"\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(loads(line))
        except DuplicateKey as exc:
            raise ValueError(f"{name}:{i}: {exc}") from None
        except ValueError:
            if i == len(lines) and not data.endswith(b"\n"):
                torn = True
                continue
            raise ValueError(f"{name}:{i}: malformed ledger line") from None
    return rows, torn


class IntentLog:
    """What a producer may have sent, fsync'd before it sends it: a header naming each key's
    partition, then `reserved` marks a block of seqs ahead (one fsync per block, not per record),
    and at a clean stop the exact count sent.

    A block is 64 seqs at a drill's rate. A block used up in less than BLOCK_S doubles, and one
    that lasts over four times that halves again, so the log is fsync'd at most about ten times
    a second at any rate: at full speed, an fsync every 64 records would keep the sending thread
    in fsync most of its time. A killed producer's reserved but unsent seqs (info rows) are at
    most 64, or what it sends in a few tenths of a second."""

    BLOCK, MAX_BLOCK = 64, 1 << 16
    BLOCK_S = 0.1

    def __init__(self, path: Path, header: dict):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.reserved = 0
        self.block = self.BLOCK
        self._reserved_at_ms: int | None = None
        self._append(header)

    def _append(self, row: dict) -> None:
        try:
            os.write(self._fd, (json.dumps(row, separators=(",", ":")) + "\n").encode())
            os.fsync(self._fd)
        except OSError as exc:
            raise LedgerError(f"cannot write intent log {self.path}: {exc.strerror or exc}") from exc

    def before_send(self, seq: int, now_ms: int) -> None:
        if seq >= self.reserved:
            if self._reserved_at_ms is not None:
                lasted_ms = now_ms - self._reserved_at_ms
                if lasted_ms < self.BLOCK_S * 1000:
                    self.block = min(self.block * 2, self.MAX_BLOCK)
                elif lasted_ms > 4 * self.BLOCK_S * 1000:
                    self.block = max(self.block // 2, self.BLOCK)
            self._reserved_at_ms = now_ms
            self.reserved = seq + self.block
            self._append({"reserved": self.reserved, "at_ms": now_ms})

    def close(self, sent: int) -> None:
        self._append({"sent": sent})
        os.close(self._fd)


# More seqs than this reserved and without a row is no producer's in-flight window (a block is
# at most IntentLog.MAX_BLOCK; a client queues at most about 100,000 records): a tampered log.
MAX_UNWRITTEN = 1_000_000


def intent_marks(intents: bytes, name: str) -> tuple[dict | None, list[tuple[int, int]], int | None]:
    """An intent log as (header, [(reserved, at_ms)], sent): ValueError naming the file and line
    for what a producer never writes (a header without its keys and partitions, a mark that is
    neither `reserved` nor `sent`, reservations that do not grow, a `sent` beyond them or not last)."""
    marks, _ = parse(intents, name)
    if not marks:
        return None, [], None
    header, marks = marks[0], marks[1:]
    try:
        validated(IntentHeader, header, "the first line")
    except ValueError as exc:
        raise ValueError(f"{name}:1: not an intent log's header ({exc})") from None
    reserved, sent = [], None
    for n, m in enumerate(marks, 2):
        if sent is not None:
            raise ValueError(f"{name}:{n}: a mark after the `sent` count, which ends the log")
        if conforms(Sent, m):
            sent = m["sent"]
            if sent > (reserved[-1][0] if reserved else 0):
                raise ValueError(f"{name}:{n}: sent {sent}, beyond the {reserved[-1][0] if reserved else 0} reserved")
        elif conforms(Reserved, m):
            if reserved and m["reserved"] <= reserved[-1][0]:
                raise ValueError(
                    f"{name}:{n}: reserved {m['reserved']} after {reserved[-1][0]}: reservations only grow"
                )
            reserved.append((m["reserved"], m["at_ms"]))
        else:
            raise ValueError(f"{name}:{n}: neither {{reserved, at_ms}} nor {{sent}}: {m!r}")
    return header, reserved, sent


def in_flight(ledger: bytes, intents: bytes, intents_name: str) -> list[dict]:
    """The `info` rows a producer's intent log implies (pure: nothing is written): one for every
    seq below what it sent (or, killed, reserved) that has no whole row in its ledger. A torn
    last line is no row, so its seq gets an info row too: the record may have reached the log,
    so it is indeterminate, never a phantom. An intent log its ledger contradicts (a row for a
    seq never reserved) is refused: ValueError naming both."""
    header, reserved, sent = intent_marks(intents, intents_name)
    if header is None:
        return []
    upper = sent if sent is not None else (reserved[-1][0] if reserved else 0)
    ledger_name = intents_name.replace("intents", "produced")
    rows, _ = parse(ledger[: ledger.rfind(b"\n") + 1], ledger_name)
    have = {r.get("seq") for r in rows if isinstance(r, dict)}
    beyond = [q for q in have if isinstance(q, int) and q >= upper]
    if beyond:
        raise ValueError(
            f"{ledger_name} has a row for seq {min(beyond)}, which {intents_name} never reserved (up to {upper})"
        )
    if upper - len(have) > MAX_UNWRITTEN:
        raise ValueError(f"{intents_name}: {upper - len(have)} seqs reserved with no row, beyond any producer's")
    keys, partitions = header["keys"], header["partitions"]
    bounds = [r for r, _ in reserved]
    out = []
    for seq in range(upper):
        if seq in have:
            continue
        # The send time is unknown: the reservation's time bounds it from below.
        at = bisect.bisect_right(bounds, seq)
        at_ms = reserved[at][1] if at < len(reserved) else (reserved[-1][1] if reserved else 0)
        out.append(
            {
                "producer_id": header["producer_id"],
                "seq": seq,
                "topic": header["topic"],
                "partition": partitions[seq % len(keys)],
                "key": keys[seq % len(keys)],
                "send_ms": at_ms,
                "status": "info",
                "ack_ms": None,
                "offset": None,
                "error": "the producer ended before this record's outcome was written (from its intent log)",
                "dc": header.get("dc"),
                **({"cluster": header["cluster"]} if header.get("cluster") else {}),
            }
        )
    return out


def recover_in_flight(ledger_path: Path, intent_path: Path) -> int:
    """After a producer ended (killed or not): write in_flight's rows into its ledger, cutting a
    torn last line off first. Returns the rows written; idempotent."""
    ledger_path, intent_path = Path(ledger_path), Path(intent_path)
    if not intent_path.exists():
        return 0
    data = ledger_path.read_bytes() if ledger_path.exists() else b""
    cut = data.rfind(b"\n") + 1
    if cut < len(data):  # a torn last line: keep whole lines only
        with open(ledger_path, "r+b") as f:
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())
    out = in_flight(data[:cut], intent_path.read_bytes(), str(intent_path))
    if out:
        with Ledger(ledger_path) as ledger:
            ledger.write_many(out)
    return len(out)
