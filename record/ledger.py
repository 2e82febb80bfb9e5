"""Crash-safe JSON Lines ledgers.

Every row is written and flushed to the OS at once, so a SIGKILL of the workload loses nothing
already written (the kernel has it); fsync runs at least once a second and on close, so a
machine crash loses at most the last second. A crash can tear the last line only; readers
(the verifier) skip a torn last line and count it. A write error (disk full) raises
LedgerError: callers stop sending records they could not account for.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path


class LedgerError(RuntimeError):
    pass


class Ledger:
    def __init__(self, path: Path, fsync_interval_s: float = 1.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        self._interval = fsync_interval_s
        self._last_sync = time.monotonic()
        self._closed = False
        self._dirty = False
        self.rows = 0
        # fsync at least once a second even when writes stop: a quiet ledger is synced too.
        self._syncer = threading.Thread(target=self._sync_loop, daemon=True, name=f"fsync {self.path.name}")
        self._syncer.start()

    def _sync_loop(self) -> None:
        while True:
            time.sleep(self._interval)
            with self._lock:
                if self._closed:
                    return
                if self._dirty:
                    try:
                        os.fsync(self._fd)
                    except OSError:
                        pass  # the next write reports the error
                    self._dirty = False
                    self._last_sync = time.monotonic()

    def write(self, row: dict) -> None:
        self.write_many([row])

    def write_many(self, rows: list[dict]) -> None:
        self.write_lines("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), len(rows))

    def write_lines(self, text: str, n_rows: int) -> None:
        """Append already-serialized JSON lines (each ending in a newline) in one write."""
        data = text.encode()
        with self._lock:
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
                raise LedgerError(f"cannot write ledger {self.path}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        with self._lock:
            if not self._closed:
                os.fsync(self._fd)
                self._dirty = False
                self._last_sync = time.monotonic()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                try:
                    os.fsync(self._fd)
                finally:
                    os.close(self._fd)
                    self._closed = True

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
            rows.append(json.loads(line))
        except ValueError:
            if i == len(lines) and not data.endswith(b"\n"):
                torn = True
                continue
            raise ValueError(f"{name}:{i}: malformed ledger line") from None
    return rows, torn
