"""A drill record behind a Hadoop filesystem URI (s3a://bucket/runs/<id>), reached through the
JVM's Hadoop FileSystem: the same credentials and endpoint settings as Spark's own reads
(`spark.hadoop.fs.s3a.*`). The record's layout and parsing are record/'s; this is only its
RecordFiles for such URIs (record/files.py)."""

from __future__ import annotations

from dcdrill.record.files import LOCAL, RecordFiles, is_remote


def files_for(spark, location: str) -> RecordFiles:
    """The RecordFiles that reach `location`: this machine's for a local folder, else Spark's."""
    return HadoopFiles(spark) if is_remote(location) else LOCAL


class HadoopFiles:
    def __init__(self, spark):
        self.spark = spark

    def _fs(self, path: str):
        p = self.spark._jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self.spark._jsc.hadoopConfiguration()), p

    def is_dir(self, path: str) -> bool:
        fs, p = self._fs(path)
        return fs.exists(p) and fs.getFileStatus(p).isDirectory()

    def listdir(self, folder: str) -> list[str] | None:
        if not self.is_dir(folder):
            return None
        fs, p = self._fs(folder)
        return sorted(s.getPath().toString() for s in fs.listStatus(p) if s.isFile())

    def read_bytes(self, path: str) -> bytes | None:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return None
        stream = fs.open(p)
        try:
            return bytes(self.spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def read_tail(self, path: str, size: int) -> bytes:
        fs, p = self._fs(path)
        length = fs.getFileStatus(p).getLen()
        stream = fs.open(p)
        try:
            stream.seek(max(0, length - size))
            return bytes(self.spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream, min(size, length)))
        finally:
            stream.close()

    def size(self, path: str) -> int | None:
        fs, p = self._fs(path)
        return fs.getFileStatus(p).getLen() if fs.exists(p) else None

    def write_bytes(self, path: str, data: bytes) -> None:
        fs, p = self._fs(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()
