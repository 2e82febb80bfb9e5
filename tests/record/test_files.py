"""A record's bytes on this machine (record/files.py LocalFiles), as DrillRecord reads and writes
them: missing is None, never an exception; a tail is the file's last bytes."""

from dcdrill.record.files import LOCAL, is_remote


def test_a_missing_file_or_folder_reads_as_none(tmp_path):
    assert LOCAL.read_bytes(str(tmp_path / "nope")) is None and LOCAL.size(str(tmp_path / "nope")) is None
    assert LOCAL.listdir(str(tmp_path / "nope")) is None and not LOCAL.is_dir(str(tmp_path / "nope"))


def test_writes_make_their_folders_and_listings_hold_files_only_sorted(tmp_path):
    LOCAL.write_bytes(str(tmp_path / "produced" / "p2.jsonl"), b"b")
    LOCAL.write_bytes(str(tmp_path / "produced" / "p1.jsonl"), b"a")
    (tmp_path / "produced" / "sub").mkdir()
    assert LOCAL.listdir(str(tmp_path / "produced")) == [
        str(tmp_path / "produced" / "p1.jsonl"),
        str(tmp_path / "produced" / "p2.jsonl"),
    ]
    assert LOCAL.read_bytes(str(tmp_path / "produced" / "p2.jsonl")) == b"b"


def test_the_tail_is_the_last_bytes_or_the_whole_of_a_short_file(tmp_path):
    path = tmp_path / "faults.jsonl"
    path.write_bytes(b'{"a": 1}\n{"torn')
    assert LOCAL.read_tail(str(path), 6) == b'{"torn'
    assert LOCAL.read_tail(str(path), 1000) == path.read_bytes() and LOCAL.size(str(path)) == 15


def test_a_uri_with_a_scheme_is_remote_and_a_path_is_not():
    assert is_remote("s3a://drills/runs/1") and not is_remote("/work/runs/1") and not is_remote("runs/a:b")
