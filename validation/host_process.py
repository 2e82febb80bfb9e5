"""One workload process (producer, consumer or audit) on its client host, as the control starts
it through host access (validation/workload.py HostProcess):

    python -m dcdrill.validation.host_process FOLDER       < request (one JSON line)
    python -m dcdrill.validation.host_process --stop FOLDER

FOLDER, on this host's own disk, is the process's drill record: it writes its ledgers, status
and log there, and the control copies the folder back when the process ended (hostaccess.fetch).

The request names its fields (REQUEST_FIELDS). This writes one JSON line to stdout each time
the process's status changes ({"status": {...}}), a producer's new acknowledgements as they land
in its ledger ({"acks": [[ack_ms, latency_ms], ...]}), and a last one when it ended ({"exit": N,
"said": its last stdout line}). Each later stdin line {"clock": N} is answered at once with
{"clock": N, "host_ms": this host's clock}: the control's round trip measures the host's clock
against its own. Its stdin closing is SIGTERM to the process: the control closes it to stop the
process, and it closes by itself when the control's session goes away.
`--stop` (heal, after a crash) stops whatever still runs with FOLDER on its command line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from dcdrill.record import DrillRecord
from dcdrill.record.contents import AGENT_FOLDERS
from dcdrill.validation import process_config

REQUEST_FIELDS = ("module", "name", "config", "password")
MODULES = ("producer", "consumer", "audit")
STATUS, ACKS, EXIT, SAID, CLOCK, HOST_MS = "status", "acks", "exit", "said", "clock", "host_ms"  # what this writes
STOP_WAIT_S = 30.0
_POLL_S = 0.5


_EMITTING = threading.Lock()  # the main loop and the clock's answers write lines from two threads


def _emit(line: dict) -> None:
    try:
        with _EMITTING:
            print(json.dumps(line), flush=True)
    except (BrokenPipeError, ValueError):  # the control went away: the process still ends cleanly
        pass


def _serve_stdin(child: subprocess.Popen) -> None:
    """Answer each {"clock": N} line with this host's clock; at end of input, SIGTERM the child."""
    for line in sys.stdin:
        try:
            asked = json.loads(line)
        except ValueError:
            continue
        if isinstance(asked, dict) and isinstance(asked.get(CLOCK), int):
            _emit({CLOCK: asked[CLOCK], HOST_MS: time.time_ns() // 1_000_000})
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)


def open_to_agents(folder: Path, gid: int) -> None:
    """The process's folder, as the agent it becomes can write it. It drops to a uid of its own
    in the agents' group (validation/clients.become_agent): setgid keeps its files in the group,
    the sticky bit lets each agent replace or remove only its own, and the folder itself lets the
    group through even when made 0700 (tempfile.mkdtemp)."""
    os.chown(folder, -1, gid)
    folder.chmod(folder.stat().st_mode & 0o7777 | 0o010)
    for name in AGENT_FOLDERS:
        sub = folder / name
        sub.mkdir(parents=True, exist_ok=True)
        os.chown(sub, -1, gid)
        sub.chmod(0o3770)


def run(folder: Path, request: dict) -> int:
    missing = [k for k in REQUEST_FIELDS if k not in request]
    if missing or request["module"] not in MODULES:
        print(f"bad request: missing {missing} or module not one of {MODULES}", file=sys.stderr)
        return 2
    try:
        process_config.checked(request["config"], f"{request['name']}'s process config")
    except ValueError as exc:
        print(f"bad request: {exc}", file=sys.stderr)
        return 2
    name, record = request["name"], DrillRecord(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and request["config"].get("agent_gid") is not None:
        open_to_agents(folder, request["config"]["agent_gid"])
    log_path = record.log(name)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cfg = {**request["config"], "run_dir": str(folder.resolve()), "parent_pid": os.getpid()}
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", f"dcdrill.validation.{request['module']}", "--config", json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    child.stdin.write((request["password"] or "").encode() + b"\n")
    child.stdin.close()
    said: list[bytes] = [b""]

    def copy_stdout() -> None:  # into the log, the last line kept (the audit's answer)
        with open(log_path, "ab") as out:
            for line in child.stdout:
                out.write(line)
                out.flush()
                if line.strip():
                    said[0] = line.strip()

    copier = threading.Thread(target=copy_stdout, daemon=True)
    copier.start()
    threading.Thread(target=_serve_stdin, args=(child,), daemon=True).start()
    status_file, last = folder / "status" / f"{record.status_name(request['module'], name)}.json", None
    acks = AckTail(record.produced(name)) if request["module"] == "producer" else None
    while True:
        ended = child.poll() is not None
        if acks and (new := acks.read()):
            _emit({ACKS: new})
        try:
            now = status_file.read_text()
        except OSError:
            now = None
        if now and now != last:
            try:
                _emit({STATUS: json.loads(now)})
                last = now
            except ValueError:  # replaced while read
                pass
        if ended:
            break
        time.sleep(_POLL_S)
    copier.join(10)
    code = child.returncode if child.returncode >= 0 else 128 - child.returncode  # a signal, as a shell says it
    _emit({EXIT: code, SAID: said[0].decode(errors="replace")})
    return code


class AckTail:
    """A producer's acknowledgements as its ledger grows: [ack_ms, latency_ms] of each new `ok`
    row, for the control's latency probe (chaos/workload/probes.py), which reads no host's disk."""

    def __init__(self, ledger: Path):
        self.ledger, self.offset = ledger, 0

    def read(self) -> list[list[int]]:
        try:
            with open(self.ledger, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:  # not written yet
            return []
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next read
        self.offset += len(whole)
        out = []
        for line in whole.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("status") == "ok" and row.get("ack_ms") is not None:
                out.append([row["ack_ms"], row["ack_ms"] - row["send_ms"]])
        return out


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def _here(pid: int | str) -> bool:
    """On this host: in this network namespace (the lab's hosts share one machine's processes)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net")
    except OSError:
        return False


def _naming(folder: str) -> list[int]:
    """Processes here whose command line has `folder` as a word: the runner's argument, or the
    `run_dir` in a workload process's JSON config (never a longer folder it begins)."""
    mark, mine, out = folder.encode(), _ancestors(), []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) not in mine and _here(proc.name):
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if mark in cmdline.split(b"\0") or b'"' + mark + b'"' in cmdline:
                out.append(int(proc.name))
    return out


def stop(folder: str) -> list[int]:
    """SIGTERM what runs on this host with `folder` on its command line (not this command and its starters),
    STOP_WAIT_S to finish, then SIGKILL. Returns the pids found."""
    found = _naming(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _naming(folder):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_WAIT_S
        while _naming(folder) and time.monotonic() < deadline:
            time.sleep(0.2)
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--stop":
        print(json.dumps({"stopped": stop(argv[1]), "exists": Path(argv[1]).is_dir()}))
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    return run(Path(argv[0]), json.loads(sys.stdin.readline()))


if __name__ == "__main__":
    sys.exit(main())
