"""The service logs of the hosts a fault touched, brought into the drill record when a wait for
the cluster gives up, so the record tells the lost DC's own story (RECORD.md: logs/<host>/).

Read over host access (as everything on a host is), the tail of each log only: the brokers' and
controllers' server.log, ZooKeeper's zookeeper.log, and what the service supervisor captured of
each JVM's output (<service>.out on the lab; the journal's copy on systemd hosts is not read yet).
The backend adds what lives beside a host rather than on it (the lab's disk daemon's log). A line
that names a secret (a password, a JAAS config, a key) is left out.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dcdrill.infra.inventory import Inventory, InventoryHost
from dcdrill.infra.observe import hostaccess

# Where the roles write each service's logs, under the host's data_root (roles/kafka_broker,
# roles/zookeeper, roles/jvm_service's `.out`).
SERVICE_FOLDERS = ("kafka", "zookeeper")
LOG_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.(log|out)$")
MAX_BYTES = 1 << 20  # per file, its tail: where the cause of a failed start or recovery is
SECRET = re.compile(r"(?i)password|secret|jaas|private key|BEGIN [A-Z ]*KEY")
LEFT_OUT = "<dcdrill: a line naming a secret, left out>"


def redact(text: str) -> str:
    """`text` without its lines that name a secret (each replaced by LEFT_OUT)."""
    return "\n".join(LEFT_OUT if SECRET.search(line) else line for line in text.split("\n"))


def host_folder(into: Path, host: InventoryHost) -> Path:
    """Where a host's logs go in the record: logs/<host name>/."""
    return into / "logs" / host.name


def collect(inventory: Inventory, hosts: list[InventoryHost], into: Path, beside: dict | None = None) -> dict:
    """Each host's service logs into `into`/logs/<host>/ (`into`: the record's folder), redacted,
    one file per log named <service folder>-<file>; `beside`: {host name: [local paths]} the
    backend adds. Returns {host: [files written]} and, for a host that could not be read, its
    reason under "unread": a failed wait is explained as far as the hosts let it be."""
    out: dict = {"unread": {}}
    for host in hosts:
        root = host.vars.get("data_root")
        folder = host_folder(into, host)
        written: list[str] = []
        try:
            names = _listed(inventory, host, root) if root else []
            for rel in names:
                text = hostaccess.run(inventory, host, ["tail", "-c", str(MAX_BYTES), f"{root}/{rel}"], timeout_s=60)
                written.append(_write(folder, rel.replace("/", "-"), text))
        except (hostaccess.HostUnreachable, hostaccess.AgentFailed, UnicodeDecodeError) as exc:
            out["unread"][host.name] = str(exc)[:300]
        for path in (beside or {}).get(host.name, []):
            if Path(path).is_file():
                with open(path, "rb") as f:
                    f.seek(max(0, Path(path).stat().st_size - MAX_BYTES))
                    written.append(_write(folder, Path(path).name, f.read().decode(errors="replace")))
        if written:
            out[host.name] = written
    return out


def _listed(inventory: Inventory, host: InventoryHost, root: str) -> list[str]:
    """The log files in the host's service folders, as <folder>/<name>, names checked."""
    script = " ".join(
        f"ls -1 {shlex.quote(root)}/{folder} 2>/dev/null | sed 's|^|{folder}/|';" for folder in SERVICE_FOLDERS
    )
    listing = hostaccess.run(inventory, host, ["sh", "-c", script], timeout_s=30)
    return sorted(
        line
        for line in listing.split("\n")
        if line.count("/") == 1 and line.split("/")[0] in SERVICE_FOLDERS and LOG_NAME.match(line.split("/")[1])
    )


def _write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(redact(text))
    return str(path)
