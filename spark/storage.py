"""Where a drill record lives: a local folder, or a Hadoop filesystem URI (s3a://bucket/runs/<id>).

Spark reads the ledgers itself; this module does the few small reads and writes around them
(listing a ledger folder, topology.json, faults.jsonl, the tail of a JSON Lines file, the report)
the same way for both. Remote paths go through the JVM's Hadoop FileSystem, so they reach what
Spark reaches, with the same credentials and endpoint settings (`spark.hadoop.fs.s3a.*`).
Local paths need no Spark session (spark may be None); a file:// URI is made a plain path
before it gets here (spark/verify.py).
"""
from __future__ import annotations

from pathlib import Path


def is_remote(path: str) -> bool:
    return "://" in path


def join(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names])


def _fs(spark, path: str):
    if spark is None:
        raise ValueError(f"{path}: a remote path needs a Spark session")
    p = spark._jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p


def is_dir(spark, path: str) -> bool:
    if not is_remote(path):
        return Path(path).is_dir()
    fs, p = _fs(spark, path)
    return fs.exists(p) and fs.getFileStatus(p).isDirectory()


def listdir(spark, folder: str) -> list[str] | None:
    """The files (not folders) directly in `folder`, as full paths; None when it does not exist."""
    if not is_dir(spark, folder):
        return None
    if not is_remote(folder):
        return sorted(str(p) for p in Path(folder).iterdir() if p.is_file())
    fs, p = _fs(spark, folder)
    return sorted(s.getPath().toString() for s in fs.listStatus(p) if s.isFile())


def read_bytes(spark, path: str) -> bytes | None:
    """The whole file; None when it does not exist."""
    if not is_remote(path):
        return Path(path).read_bytes() if Path(path).is_file() else None
    fs, p = _fs(spark, path)
    if not fs.exists(p):
        return None
    stream = fs.open(p)
    try:
        return bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def read_tail(spark, path: str, size: int) -> bytes:
    """The last `size` bytes of a file (all of it when shorter)."""
    if not is_remote(path):
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - size))
            return f.read()
    fs, p = _fs(spark, path)
    length = fs.getFileStatus(p).getLen()
    stream = fs.open(p)
    try:
        stream.seek(max(0, length - size))
        return bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream, min(size, length)))
    finally:
        stream.close()


def write_bytes(spark, path: str, data: bytes) -> None:
    """Create or replace a file (and its parent folders)."""
    if not is_remote(path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
        return
    fs, p = _fs(spark, path)
    out = fs.create(p, True)
    try:
        out.write(bytearray(data))
    finally:
        out.close()
