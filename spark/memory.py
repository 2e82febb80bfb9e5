"""The verifier's memory plan: how much heap Spark gets when nobody said, how wide its shuffles
are, and what a record that still does not fit is told.

What grows with a record is the scan's cache (spark/jvm/Scan.java): every produced and audit row
packed into longs, 6 a produced row and 4 an audit row, kept in memory first and on disk after.
Every other state is bounded per task: the screen's per 64 seqs, the identity pass's by its
flush and reducer limits (Identity.FOLD_LIMIT, JUDGE_LIMIT). So the heap only decides how much
of the cache stays in memory, and a cache spilled to disk is read back more slowly. The plan asks
for room for the cache, within a share of what the machine has free.

A heap set by the user (DCDRILL_SPARK_DRIVER_MEMORY, --conf spark.driver.memory, spark-submit)
is never changed. A record that does not fit in it exits 2 naming that setting (`failure`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30
MIB = 1 << 20
PACKED_BYTES = {"produced": 48, "audit": 32}  # Scan.Packer: consumed rows are not kept
# A row's smallest size on disk, so that the row count is an upper bound: dcdrill's own Parquet
# ledgers dictionary-encode producer ids, so a row can take as little as MIN_ROW_BYTES[".parquet"].
MIN_ROW_BYTES = {".parquet": 5, ".jsonl": 80, ".json": 80}
FLOOR = 4 * GIB  # the heap below which nothing is gained by asking for less
MACHINE_SHARE = 0.6  # at most this share of the machine's available memory
CACHE_PER_REDUCER = 1 << 30  # ~25M rows: a reducer's screen states stay under ~100 MB


@dataclass(frozen=True)
class Plan:
    cache: int  # bytes the scan would keep, an upper bound from the files' sizes (0: unknown)
    wanted: int  # bytes of heap that would keep all of it in memory
    available: int  # the machine's available memory
    heap: int  # what Spark gets
    partitions: int  # shuffle partitions

    @property
    def heap_setting(self) -> str:
        return f"{max(1, self.heap // MIB)}m"


def cache_bytes(run_dir: str) -> int:
    """An upper bound on what the scan keeps of a local record (its produced and audit rows,
    packed), from its files' sizes; 0 when the record is not a local folder."""
    root = Path(run_dir)
    total = 0
    for kind, packed in PACKED_BYTES.items():
        folder = root / kind
        if folder.is_dir():
            total += sum(
                f.stat().st_size // MIN_ROW_BYTES[f.suffix] * packed
                for f in folder.rglob("*")
                if f.suffix in MIN_ROW_BYTES and f.is_file()
            )
    return total


def available_memory() -> int:
    """MemAvailable from /proc/meminfo, or the physical memory where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def plan(run_dirs: list[str], cores: int | None = None, available: int | None = None) -> Plan:
    """The heap and shuffle width for verifying these records in one session (the largest
    decides): room for the packed cache twice over (Spark's storage share of the heap is ~60 %)
    plus 2 GB for the folds, at least FLOOR, at most MACHINE_SHARE of the available memory."""
    cores = cores or os.cpu_count() or 2
    available = available if available is not None else available_memory()
    cache = max((cache_bytes(d) for d in run_dirs), default=0)
    wanted = 2 * GIB + 2 * cache
    cap = int(available * MACHINE_SHARE)
    heap = max(min(wanted, cap), min(FLOOR, cap), GIB // 2)
    partitions = max(4, 2 * cores, -(-cache // CACHE_PER_REDUCER))
    return Plan(cache=cache, wanted=wanted, available=available, heap=heap, partitions=partitions)


# The verifier's JVM ends at its first OutOfMemoryError, whichever thread hit it: otherwise a
# background thread of Spark's (the context cleaner, say) prints its stack trace to the user's
# terminal before the driver notices, where one line naming the setting to raise was promised.
JVM_OPTIONS = "-XX:+ExitOnOutOfMemoryError"
JVM_OOM_EXIT = 3  # what -XX:+ExitOnOutOfMemoryError exits with


def failure(exc: BaseException, heap: str | None, jvm: subprocess.Popen | None = None) -> str:
    """One line for a record that could not be verified: running out of memory (or the JVM ending,
    which is how Spark ends one that did) names the setting to raise; anything else is named by
    its first line. `heap`: the heap the session was given; `jvm`: the JVM process this process
    launched for Spark (session.jvm_process()), None under spark-submit."""
    errors, e = [], exc
    while e is not None and len(errors) < 8:  # the first failure may hide behind a later one's
        errors.append(e)
        e = e.__cause__ or e.__context__
    chain = [_text(e) for e in errors]
    proc = jvm
    if proc is not None and any("py4j" in type(e).__module__ or isinstance(e, ConnectionError) for e in errors):
        with contextlib.suppress(subprocess.TimeoutExpired):  # a JVM that is halting: let it end
            proc.wait(timeout=5)
    ended = proc.returncode if proc is not None and proc.poll() is not None else None
    given = heap or "Spark's default heap"
    # Spark halts a JVM whose task ran out of memory with exit code 52 (SparkExitCode.OOM); the
    # JVM itself ends with JVM_OOM_EXIT on any thread's first one (JVM_OPTIONS).
    if any("OutOfMemoryError" in t for t in chain) or ended in (52, JVM_OOM_EXIT):
        return (
            f"the record does not fit in the verifier's memory ({given}): raise DCDRILL_SPARK_DRIVER_MEMORY "
            "(or --conf spark.driver.memory=...; spark.executor.memory on a cluster), e.g. to twice that "
            "(docs/verifier.md, Verifier memory)"
        )
    if ended:  # exit 0: a JVM this process let go once its Spark work was done (session.begin_ending_jvm)
        return (
            f"the verifier's JVM ended (exit {ended}) while verifying; if it ran out of memory, raise "
            f"DCDRILL_SPARK_DRIVER_MEMORY (spark.driver.memory; it had {given})"
        )
    return f"cannot be verified: {_own_message(chain[0])}"


def _own_message(text: str) -> str:
    """A JVM exception's own message behind Py4J's header ("An error occurred while calling
    o1.f.\n: org.X.SparkException: [CODE] message"): it names the file and column; else line one."""
    lines = text.splitlines() or [""]
    for line in lines[1:]:
        own = re.match(r":?\s*(?:[\w$]+\.)+[\w$]*(?:Exception|Error): (.+)", line)
        if own:
            return own.group(1).strip()
    return lines[0]


def _text(e: BaseException) -> str:
    """An exception as text, without asking a JVM that may be gone (Py4J's errors do, in str())."""
    try:
        text = str(e).strip()
    except Exception:  # noqa: BLE001 - the JVM behind a Py4J error has ended
        text = str(e.args[0]).strip() if e.args else ""
    return f"{type(e).__name__}: {text}"
