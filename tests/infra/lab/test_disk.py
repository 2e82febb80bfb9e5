"""The lab's power-loss disk (infra/lab/disk, `dcdrill-disk`) on a real FUSE mount: what was
fsync'd or written back survives a cut, nothing else does, and the kernel checks permissions
as a disk would. Needs root and /dev/fuse (the lab needs both); no lab."""

import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dcdrill.infra.lab import disk

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="needs root and /dev/fuse")


@pytest.fixture
def mounted():
    # Not under pytest's tmp_path (0700): the services' uids must reach the mount, as under the cache.
    top = Path(tempfile.mkdtemp(prefix="dcdrill-disk-"))
    top.chmod(0o711)

    def mount(writeback_s: float = 3600.0, journal_commit_s: float = 3600.0):
        lab, root = top / "lab", top / "lab" / "hosts" / "b1"
        disk.start(lab, "b1", root, writeback_s, journal_commit_s=journal_commit_s)
        mounts.append((lab, root))
        return lab, root

    mounts = []
    yield mount
    for lab, root in mounts:
        disk.stop(lab, "b1", root)
        assert not disk.mounted(root)
    shutil.rmtree(top)


def _write(path: Path, data: bytes, sync: bool = False, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def test_a_cut_keeps_what_was_fsynced_and_drops_the_rest(mounted):
    lab, root = mounted()
    _write(root / "segment.log", b"A" * 1000, sync=True)
    _write(root / "segment.log", b"B" * 500)  # appended, never synced
    with open(root / "segment.log", "r+b") as f:  # overwrites synced bytes
        f.seek(100)
        f.write(b"C" * 50)
    _write(root / "new.log", b"x" * 4096)  # created and written, never synced
    assert disk.stats(lab, "b1") == {"powered": True, "dirty_files": 2, "dirty_bytes": 500 + 50 + 4096}

    assert disk.cut(lab, "b1") == {"files": 2, "bytes_lost": 500 + 50 + 4096}
    _write(root / "segment.log", b"D")  # taken and dropped while the power is off (no error left on the file)
    disk.power(lab, "b1")
    assert (root / "segment.log").read_bytes() == b"A" * 1000
    assert (root / "new.log").read_bytes() == b""  # the file is there (metadata passes through), its data not
    assert (disk.backing(lab, "b1") / "segment.log").read_bytes() == b"A" * 1000


def test_an_overwrite_through_a_write_only_descriptor_is_undone(mounted):
    """ZooKeeper writes its preallocated transaction log through a FileOutputStream (O_WRONLY)."""
    lab, root = mounted()
    _write(root / "log.1", b"\0" * 4096, sync=True)
    fd = os.open(root / "log.1", os.O_WRONLY)
    try:
        assert os.pwrite(fd, b"txn", 0) == 3
    finally:
        os.close(fd)
    assert disk.cut(lab, "b1") == {"files": 1, "bytes_lost": 3}
    disk.power(lab, "b1")
    assert (root / "log.1").read_bytes() == b"\0" * 4096


def test_a_shrink_of_synced_data_is_undone_and_mmap_writes_not_synced_are_lost(mounted):
    lab, root = mounted()
    _write(root / "index", b"\0" * 8192, sync=True)
    with open(root / "index", "r+b") as f:  # Kafka's indexes are mapped files
        m = mmap.mmap(f.fileno(), 8192)
        m[0:4] = b"SYNC"
        m.flush()
        os.fsync(f.fileno())
        m[4096:4100] = b"LOST"
        m.close()
    os.truncate(root / "index", 10)
    disk.cut(lab, "b1")
    disk.power(lab, "b1")
    data = (root / "index").read_bytes()
    assert len(data) == 8192 and data[:4] == b"SYNC" and data[4096:4100] == b"\0" * 4


def test_a_truncate_the_journal_committed_survives_a_cut_and_what_was_written_after_it_does_not(mounted):
    """A follower truncates its log to the new leader's offset, then appends. On ext4 the truncate
    is durable at the journal's next commit, the appended data only at its write-back: a cut in
    between brings back neither the truncated records nor the new ones."""
    lab, root = mounted(journal_commit_s=1)
    _write(root / "00.log", b"A" * 1000 + b"OLD" * 100, sync=True)
    os.truncate(root / "00.log", 1000)
    time.sleep(2.5)  # the journal has committed the shrink; its data write-back is 3600 s away
    _write(root / "00.log", b"NEW" * 10)
    assert disk.cut(lab, "b1") == {"files": 1, "bytes_lost": 30}
    disk.power(lab, "b1")
    assert (root / "00.log").read_bytes() == b"A" * 1000


def test_what_the_kernel_wrote_back_survives_a_cut(mounted):
    lab, root = mounted(writeback_s=1)
    _write(root / "config", b"kept")
    time.sleep(2.5)  # older than the write-back delay: on disk, as the kernel would have it
    _write(root / "segment.log", b"lost")
    assert disk.cut(lab, "b1") == {"files": 1, "bytes_lost": 4}
    disk.power(lab, "b1")
    assert (root / "config").read_bytes() == b"kept" and (root / "segment.log").read_bytes() == b""


def _as_uid(uid: int, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", f"import os; os.setgid({uid}); os.setuid({uid}); {code}"], capture_output=True, text=True
    )


def test_the_kernel_checks_each_services_permissions(mounted):
    lab, root = mounted()
    (root / "b1").mkdir()
    os.chown(root / "b1", 200_267, 200_267)
    os.chmod(root / "b1", 0o700)
    own = _as_uid(200_267, f"open('{root}/b1/key', 'w').write('secret'); print(os.stat('{root}/b1/key').st_uid)")
    assert own.returncode == 0 and own.stdout.strip() == "200267"  # created as its caller, as on a disk
    other = _as_uid(200_268, f"open('{root}/b1/key').read()")
    assert "Permission denied" in other.stderr


def test_a_cut_disk_shows_as_a_fault_in_place_and_heal_powers_it(mounted, monkeypatch):
    from dcdrill.infra.lab.backend import LabBackend

    lab, root = mounted()
    monkeypatch.setattr("dcdrill.infra.lab.layout.lab_dir", lambda cache: lab)
    assert LabBackend._unpowered() == []
    disk.cut(lab, "b1")
    assert LabBackend._unpowered() == ["b1"]
    disk.power(lab, "b1")
    assert LabBackend._unpowered() == []


def test_a_missing_binary_and_a_dead_disk_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "binary", lambda: tmp_path / "bin" / "dcdrill-disk")
    with pytest.raises(disk.DiskError, match=r"dcdrill-disk is missing: run `make setup`"):
        disk.start(tmp_path, "b1", tmp_path / "hosts" / "b1", 30)
    with pytest.raises(disk.DiskError, match=r"b1's disk did not answer 'cut'"):
        disk.cut(tmp_path, "b1")
