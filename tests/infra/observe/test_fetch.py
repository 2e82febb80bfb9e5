"""infra/observe/hostaccess.fetch: a client host's folder comes back into the record as a tar
stream, which is input. Every stream here is made by Python's tarfile; the host's side (ssh, tar)
is replaced by `cat` of that stream, the rest is the real unpacking."""

import io
import tarfile

import pytest

from dcdrill.infra.observe import hostaccess
from dcdrill.record.contents import is_agent_file


@pytest.fixture
def host_side(monkeypatch, tmp_path):
    removed = []
    stream = tmp_path / "stream.tar"
    monkeypatch.setattr(hostaccess, "ssh_command", lambda inv, host, remote: ["cat", str(stream)])
    monkeypatch.setattr(hostaccess, "run", lambda inv, host, remote, **k: removed.append(remote) or "")
    return stream, removed


class Host:
    name = "c1.dc-a.lab"


def tar(path, members) -> None:
    """members: (name, kind, data or link target)."""
    with tarfile.open(path, "w") as t:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "fifo": tarfile.FIFOTYPE, "device": tarfile.CHRTYPE}[kind]  # fmt: skip
            if kind in ("symlink", "hardlink"):
                info.linkname = data
            t.addfile(info)


GOOD = [
    (".", "dir", None),
    ("./produced", "dir", None),
    ("./produced/p1.jsonl", "file", b'{"seq": 0}\n'),
    ("./status", "dir", None),
    ("./status/producer-p1.json", "file", b'{"final": true}'),
    ("./logs/p1.log", "file", b"started\n"),
    ("./audit-end.json", "file", b"{}"),
]


def test_an_agents_folder_merges_into_the_record_and_is_removed_on_its_host(host_side, tmp_path):
    stream, removed = host_side
    tar(stream, GOOD)
    into = tmp_path / "record"
    (into / "status").mkdir(parents=True)
    (into / "status" / "producer-p1.json").write_text('{"final": false}')  # relayed earlier: replaced
    (into / "agents.jsonl").write_text("kept\n")
    hostaccess.fetch(None, Host(), "/h/agents/r", into, is_agent_file)
    assert (into / "produced" / "p1.jsonl").read_bytes() == b'{"seq": 0}\n'
    assert (into / "status" / "producer-p1.json").read_text() == '{"final": true}'
    assert (into / "agents.jsonl").read_text() == "kept\n"
    assert not [p for p in into.iterdir() if p.name.startswith(".incoming")]
    assert removed == [["rm", "-rf", "--", "/h/agents/r"]]


HOSTILE = {
    "the fault state": [("./chaos-state.json", "file", b'{"active": []}')],
    "the agents list": [("./agents.jsonl", "file", b"{}\n")],
    "the topology": [("./topology.json", "file", b"{}")],
    "a path climbing out": [("../../etc/cron.d/x", "file", b"* * * * * root id\n")],
    "an absolute path": [("/etc/passwd", "file", b"root::0:0::/:/bin/sh\n")],
    "a symlink": [("./produced/p1.jsonl", "symlink", "/etc/shadow")],
    "a hard link": [("./produced/p2.jsonl", "hardlink", "/etc/shadow")],
    "a fifo": [("./produced/p3.jsonl", "fifo", None)],
    "a device": [("./logs/tty", "device", None)],
    "a nested folder": [("./produced/deep/p1.jsonl", "file", b"{}\n")],
    "a hidden name": [("./produced/.p1.jsonl", "file", b"{}\n")],
    "the report": [("./report/index.html", "file", b"<b>PASS</b>")],
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_folder_holding_anything_but_the_agents_own_files_is_refused_whole(host_side, tmp_path, case):
    stream, removed = host_side
    tar(stream, GOOD + HOSTILE[case])
    into = tmp_path / "record"
    into.mkdir()
    with pytest.raises(hostaccess.AgentFailed, match="did not come back: .* is not a file the drill's processes write"):
        hostaccess.fetch(None, Host(), "/h/agents/r", into, is_agent_file)
    assert sorted(p.name for p in into.iterdir()) == []  # nothing merged, not even the good files
    assert removed == []  # the host keeps its copy
    assert not (tmp_path / "etc").exists()


def test_a_stream_that_is_not_tar_is_refused(host_side, tmp_path):
    stream, removed = host_side
    stream.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(hostaccess.AgentFailed, match="not a tar stream"):
        hostaccess.fetch(None, Host(), "/h/agents/r", tmp_path / "record", is_agent_file)
    assert removed == []
