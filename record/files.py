"""Where a drill record's bytes live. A record is a local folder or a folder behind a Hadoop URI
(s3a://bucket/runs/<id>); DrillRecord names every file in it and reads and writes them through a
RecordFiles. LocalFiles is this machine's; the verifier brings one that goes through Spark's
Hadoop filesystems (spark/storage.py), so a record in S3 is read with Spark's credentials."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


def is_remote(location: str) -> bool:
    return "://" in location


class RecordFiles(Protocol):
    """Paths are strings here: a Hadoop URI is no pathlib.Path."""

    def is_dir(self, path: str) -> bool: ...

    def listdir(self, folder: str) -> list[str] | None:
        """The files (not folders) directly in `folder`, as full paths, sorted; None when it does not exist."""

    def read_bytes(self, path: str) -> bytes | None:
        """The whole file; None when it does not exist."""

    def read_tail(self, path: str, size: int) -> bytes:
        """The last `size` bytes of a file (all of it when shorter)."""

    def size(self, path: str) -> int | None:
        """The file's length in bytes; None when it does not exist."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file (and its parent folders)."""


class LocalFiles:
    def is_dir(self, path: str) -> bool:
        return Path(path).is_dir()

    def listdir(self, folder: str) -> list[str] | None:
        if not Path(folder).is_dir():
            return None
        return sorted(str(p) for p in Path(folder).iterdir() if p.is_file())

    def read_bytes(self, path: str) -> bytes | None:
        return Path(path).read_bytes() if Path(path).is_file() else None

    def read_tail(self, path: str, size: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - size))
            return f.read()

    def size(self, path: str) -> int | None:
        return Path(path).stat().st_size if Path(path).is_file() else None

    def write_bytes(self, path: str, data: bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)


LOCAL = LocalFiles()
