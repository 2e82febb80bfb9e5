"""Host access: the one way the control reaches a stack's hosts, on both backends. The control
never dials a Kafka, ZooKeeper, controller or MM2 port: what observes the cluster runs as an
agent (infra/observe/agent.py) on one of the stack's client hosts, inside its DCs, started through host
access, its answer read back from its output.

Both backends: SSH as the inventory's unprivileged login user, `sudo` for what it runs, and the
agents run on the client host's own Python (dcdrill's modules and the packages they need,
installed there by roles/dcdrill_agent), never on a copy of the control's.
- Lab: the address from the host's own HostName option (infra/lab/sshd.py admits the user).
- AWS: ssh's ProxyCommand opens an SSM session to the instance (infra/aws/ssm_tunnel.py).

One connection a host (ssh's ControlMaster) for the calls that come and go (agent calls, polls,
transfers), shared by those that trust the same host keys: on AWS a new connection is an SSM
session and a key push, so a poll every few seconds would be throttled. A master is started on
its own, running nothing (so no process of a drill's lives on in it), checked before each use,
started again when it has gone, and ends within seconds once its host stops answering (a cut), so
no call waits on it longer than a connection's timeout. What runs for the whole drill (a workload
process, the coordination watch) keeps a connection of its own, as a stalled one outlives a cut.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dcdrill.infra.inventory import Inventory, InventoryHost

UNREACHABLE = 255  # ssh's own exit code: the session never ran the command
REFUSED = 3  # infra/observe/agent.py's exit for a call the cluster refused as the caller's mistake (ValueError)


class HostAccessUnavailable(RuntimeError):
    """The inventory's connection cannot start agents from here."""


class HostUnreachable(RuntimeError):
    """No client host answered on host access."""


class AgentFailed(RuntimeError):
    """The agent ran and failed."""


# A master left idle this long exits; a drill's calls come far more often. One whose host stops
# answering ends after ALIVE_S x ALIVE_MISSES (ssh's ServerAlive), failing the calls riding it.
MASTER_PERSIST_S = 300
ALIVE_S, ALIVE_MISSES = 3, 2
# After a master failed to start, calls go direct (failing as ssh says) until this has passed,
# doubled after each further failure up to the cap.
MASTER_RETRY_S, MASTER_RETRY_MAX_S = 5.0, 60.0
# A unix socket's path holds at most 107 bytes: a longer folder means no pooling, not an error.
SOCKET_PATH_MAX = 100


def ssh_command(
    inventory: Inventory, host: InventoryHost, remote: list[str], first: list[str] = (), shared: bool = True
) -> list[str]:
    """ssh's argv that runs `remote` on `host` as root (sudo), as Ansible logs in, over the host's
    shared connection unless `shared` is False; `first`: options ahead of the inventory's (ssh
    takes an option's first value), on a connection of its own (a first contact must see the key)."""
    v = inventory.vars
    if v.get("lab_control_state"):  # the lab's hosts share the control's disk: hide its state from them
        remote = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            'mount -t tmpfs -o size=64k,mode=0755 not-on-this-host "$0" && exec "$@"',
            v["lab_control_state"],
            *remote,
        ]
    connect, target = _connection(inventory, host)
    via = _shared(inventory, connect, target) if shared and not first else []
    return [connect[0], *first, *connect[1:], *via, target, shlex.join(["sudo", "-n", *remote])]


def _connection(inventory: Inventory, host: InventoryHost) -> tuple[list[str], str]:
    """ssh's options for `host` (key, the inventory's options, the host's own) and its login."""
    v = inventory.vars
    if v.get("ansible_connection", "ssh") != "ssh" or "ansible_ssh_private_key_file" not in v:
        # A stack's bare Pulumi outputs, read on a control that never wrote its inventory, name
        # neither this control's key nor, on AWS, its tunnel (infra/ansible.py adds both).
        raise HostAccessUnavailable(
            f"cluster {v.get('cluster_name')}: no ssh access from this control in its "
            f"inventory ({v.get('ansible_connection', 'ssh')}): run `dcdrill lab up` here first"
        )
    connect = [
        "ssh",
        "-i",
        v["ansible_ssh_private_key_file"],
        *shlex.split(v.get("ansible_ssh_common_args", "")),
        *shlex.split(host.vars.get("ansible_ssh_extra_args", "")),
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=5",
    ]
    return connect, f"{v['ansible_user']}@{host.address}"


def known_hosts_file(inventory: Inventory) -> Path | None:
    """The known_hosts file the inventory's ssh options name; None if they name none."""
    found = re.search(r"UserKnownHostsFile=(\S+)", inventory.vars.get("ansible_ssh_common_args", ""))
    return None if not found or found.group(1) == "/dev/null" else Path(found.group(1))


def masters_dir(inventory: Inventory) -> Path | None:
    """The folder of the inventory's shared connections' sockets: beside its known_hosts file, so
    that only connections trusting the same host keys share one. None: no known_hosts file, or a
    folder too deep for a socket's path (each connection on its own then)."""
    known = known_hosts_file(inventory)
    folder = known.parent / "mux" if known else None
    return folder if folder and len(str(folder)) + 33 <= SOCKET_PATH_MAX else None


def _socket(folder: Path, connect: list[str], target: str) -> Path:
    """One socket per way of connecting: the same host through another key, proxy or address is another."""
    return folder / hashlib.sha256(json.dumps([*connect, target]).encode()).hexdigest()[:32]


def _shared(inventory: Inventory, connect: list[str], target: str) -> list[str]:
    """The options that route a session through the host's master, started first if it is not
    running; none (a connection of its own) when there is no master to be had."""
    folder = masters_dir(inventory)
    if folder is None:
        return []
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock = _socket(folder, connect, target)
    via = ["-o", "ControlMaster=no", "-o", f"ControlPath={sock}"]
    with open(sock.with_suffix(".lock"), "w") as lock:  # one start at a time per host, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if sock.exists() and _alive(sock):
            return via
        sock.unlink(missing_ok=True)  # a master killed without its clean-up
        failed = sock.with_suffix(".failed")
        if failed.exists() and time.time() < failed.stat().st_mtime + _retry_s(failed):
            return []
        try:
            started = subprocess.run(
                [
                    *connect,
                    "-o",
                    "ControlMaster=yes",
                    "-o",
                    f"ControlPath={sock}",
                    "-o",
                    f"ControlPersist={MASTER_PERSIST_S}",
                    "-o",
                    f"ServerAliveInterval={ALIVE_S}",
                    "-o",
                    f"ServerAliveCountMax={ALIVE_MISSES}",
                    "-N",
                    "-f",
                    target,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # the forked master keeps these: a pipe would never close
                stderr=subprocess.DEVNULL,
                timeout=60,
                env=_master_env(tunnelled=any(a.startswith("ProxyCommand=") for a in connect)),
            )
        except subprocess.TimeoutExpired:
            started = subprocess.CompletedProcess([], UNREACHABLE)
        if started.returncode == 0 and sock.exists():
            failed.unlink(missing_ok=True)
            return via
        failed.write_text(str(_failures(failed) + 1))
        return []


# A master outlives the process that started it: it keeps what its connection needs (on AWS, the
# credentials its tunnel opens SSM sessions with), not the rest of that environment (a CI job's tokens).
MASTER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")


def _master_env(tunnelled: bool) -> dict[str, str]:
    kept = ("DCDRILL_", "AWS_") if tunnelled else ("DCDRILL_",)
    return {k: v for k, v in os.environ.items() if k in MASTER_ENV or k.startswith(kept)}


def _failures(failed: Path) -> int:
    """Master starts failed in a row, as the marker file counts them (0 without one)."""
    try:
        return max(0, int(failed.read_text()))
    except (OSError, ValueError):
        return 0


def _retry_s(failed: Path) -> float:
    return min(MASTER_RETRY_S * 2 ** max(0, _failures(failed) - 1), MASTER_RETRY_MAX_S)


def _alive(sock: Path) -> bool:
    res = subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "check", "master"], capture_output=True, timeout=10)
    return res.returncode == 0


def close_masters(inventory: Inventory) -> int:
    """End every shared connection of the inventory's known hosts (a stack brought down, or up anew:
    a master to a host that is gone would hold its sessions); how many were running."""
    folder = masters_dir(inventory)
    ended = 0
    for sock in sorted(folder.iterdir()) if folder and folder.is_dir() else []:
        if sock.suffix:  # .lock, .failed
            sock.unlink(missing_ok=True)
            continue
        res = subprocess.run(
            ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "master"], capture_output=True, timeout=10
        )
        ended += res.returncode == 0
        sock.unlink(missing_ok=True)
    return ended


def reason(res: subprocess.CompletedProcess) -> str:
    """ssh's last word on a failed session (its error comes last on stderr)."""
    said = res.stderr.strip()
    return said.splitlines()[-1] if said else f"exit {res.returncode}"


def python_module(host: InventoryHost, module: str, *args: str) -> list[str]:
    """`python -m MODULE ARGS` as `host` runs it, with its own agent Python (roles/dcdrill_agent)."""
    if "dcdrill_agent_dir" not in host.vars:
        raise HostAccessUnavailable(f"{host.name} is not a client host: dcdrill's agents run on client hosts only")
    return [f"{host.vars['dcdrill_agent_dir']}/venv/bin/python", "-m", module, *args]


def agent_command(inventory: Inventory, host: InventoryHost, call: str) -> list[str]:
    """The control's command that runs `python -m dcdrill.infra.observe.agent CALL` on `host`."""
    return ssh_command(inventory, host, python_module(host, "dcdrill.infra.observe.agent", call))


def observers(inventory: Inventory, avoid_dcs: Sequence[str] = ()) -> list[InventoryHost]:
    """The client hosts an agent may run on, those outside `avoid_dcs` first, the first of them
    the most to avoid (a drill's cut DC, then its target: context.observers_avoid): a cut DC's
    client sees only its own DC, and on AWS loses its session."""
    clients = sorted(inventory.clients, key=lambda h: (*(h.dc == dc for dc in avoid_dcs), h.dc, h.node_id))
    if not clients:
        raise HostUnreachable(f"cluster {inventory.vars.get('cluster_name')} has no client host to observe it from")
    return clients


# The SASL users each agent call connects as (every other call: the admin alone). A call is sent
# those users' passwords and no other, so a host that runs a call learns no more than it needs.
CALL_USERS = {"canary": ("client",), "mirror_status": ()}


def payload(inventory: Inventory, call: str, args: dict | None) -> str:
    """An agent's request for `call`: the inventory, the call's arguments, and the secrets it needs
    (the host has no copy of the control's files)."""
    secrets = inventory.agent_secrets(CALL_USERS.get(call, ("admin",)))
    return json.dumps({"inventory": inventory.data, "args": args or {}, "secrets": secrets}) + "\n"


def call(
    inventory: Inventory, name: str, args: dict | None = None, avoid_dcs: Sequence[str] = (), timeout_s: float = 120
) -> dict | list:
    """Run one agent call on the first client host that answers (observers' order); its JSON answer."""
    tried = []
    for host in observers(inventory, avoid_dcs):
        try:
            res = subprocess.run(
                agent_command(inventory, host, name),
                input=payload(inventory, name, args),
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            tried.append(f"{host.name}: no answer in {timeout_s:.0f} s")
            continue
        if res.returncode == UNREACHABLE:
            tried.append(f"{host.name}: {reason(res)}")
            continue
        if res.returncode == REFUSED:
            raise ValueError(json.loads(res.stdout)["refused"])
        if res.returncode != 0:
            raise AgentFailed(f"agent {name} on {host.name} exited {res.returncode}: {res.stderr.strip()[-600:]}")
        return json.loads(res.stdout)
    raise HostUnreachable(
        f"no client host of cluster {inventory.vars.get('cluster_name')} answered on host access: " + "; ".join(tried)
    )


def unanswered(inventory: Inventory, timeout_s: float = 20.0) -> list[str]:
    """Every host of the inventory that does not answer on host access (with `sudo`, as the roles
    and agents need it), each named with ssh's reason; all asked at once."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(host: InventoryHost) -> str | None:
        try:
            res = subprocess.run(
                ssh_command(inventory, host, ["true"]), capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            return f"{host.name} (no answer in {timeout_s:.0f} s)"
        if res.returncode == 0:
            return None
        return f"{host.name} ({reason(res)})"

    hosts = inventory.hosts()
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(hosts)))) as pool:
        return [answer for answer in pool.map(ask, hosts) if answer]


def stream(
    inventory: Inventory, name: str, host: InventoryHost, args: dict | None = None, log=subprocess.DEVNULL
) -> subprocess.Popen:
    """Start a long-running agent on `host` (one of observers()): it writes one JSON
    line per result and ends when its stdin closes (close the returned process's stdin), its own
    deadline passes, or the control goes away (the session ends). Its stderr goes to `log` (a
    file), never to a pipe nobody reads, which would stop it once full."""
    proc = subprocess.Popen(
        ssh_command(inventory, host, python_module(host, "dcdrill.infra.observe.agent", name), shared=False),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        bufsize=1,
    )
    proc.stdin.write(payload(inventory, name, args))
    proc.stdin.flush()
    return proc


def start(inventory: Inventory, host: InventoryHost, remote: list[str], request: str, log) -> subprocess.Popen:
    """Start `remote` on `host` (as root, through `sudo`), `request` its first stdin line; the
    stdin stays open, and closing it is how the control says stop (the session going away says
    the same). Its stdout is the returned process's, line by line; its stderr goes to `log`."""
    # Its own session: a Ctrl-C at the terminal goes to dcdrill, which stops its agents its own way.
    proc = subprocess.Popen(
        ssh_command(inventory, host, remote, shared=False),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        bufsize=1,
        start_new_session=True,
    )
    proc.stdin.write(request)
    proc.stdin.flush()
    return proc


def run(inventory: Inventory, host: InventoryHost, remote: list[str], timeout_s: float = 120) -> str:
    """`remote` on `host` (as root), to its end; its stdout. HostUnreachable / AgentFailed when it
    did not run or failed."""
    try:
        res = subprocess.run(ssh_command(inventory, host, remote), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise HostUnreachable(f"{host.name}: no answer in {timeout_s:.0f} s") from None
    if res.returncode == UNREACHABLE:
        raise HostUnreachable(f"{host.name}: {reason(res)}")
    if res.returncode != 0:
        raise AgentFailed(
            f"{shlex.join(remote[:4])} on {host.name} exited {res.returncode}: {res.stderr.strip()[-600:]}"
        )
    return res.stdout


def fetch(
    inventory: Inventory,
    host: InventoryHost,
    folder: str,
    into: Path,
    allowed: Callable[[str], bool],
    timeout_s: float = 600,
) -> None:
    """The transfer step: what an agent wrote in `folder` on its host's own disk, copied into the
    local folder `into` (merged with what is there), then removed from the host. The host's tar
    stream is input: it is unpacked into a staging folder with tarfile's `data` filter, and every
    member must be a plain file or folder whose path `allowed` accepts (the agent's own files), or
    nothing is merged. A folder that does not come back whole raises (AgentFailed), so a drill
    missing its clients' files fails, and the host keeps its copy."""
    into.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=into))
    pack = subprocess.Popen(
        ssh_command(inventory, host, ["tar", "-C", folder, "-cf", "-", "."]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    refused: list[str] = []
    try:
        try:
            refused = _unpack(pack.stdout, staging, allowed)
        except (tarfile.TarError, OSError) as exc:
            refused = [f"not a tar stream ({exc})"]
        pack.stdout.close()
        err = pack.stderr.read().decode(errors="replace").strip()
        if pack.wait(timeout_s) != 0 and not refused:
            refused = [err.splitlines()[-1] if err else f"tar exited {pack.returncode}"]
        if refused:
            raise AgentFailed(f"the files in {folder} on {host.name} did not come back: {'; '.join(refused[:5])}")
        _merge(staging, into)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    run(inventory, host, ["rm", "-rf", "--", folder])


def _unpack(stream, staging: Path, allowed: Callable[[str], bool]) -> list[str]:
    """Each member of the tar `stream` into `staging`; what was refused (nothing kept then)."""
    refused = []
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if name in ("", "."):
                continue
            if not (member.isfile() or member.isdir()) or not allowed(name):
                refused.append(f"{member.name!r} is not a file the drill's processes write")
                continue
            try:
                tar.extract(member, staging, filter="data")
            except tarfile.FilterError as exc:
                refused.append(f"{member.name!r}: {exc}")
    return refused


def _merge(staging: Path, into: Path) -> None:
    """The staged files into place, each replacing what is there (never through a link)."""
    for path in sorted(staging.rglob("*")):
        target = into / path.relative_to(staging)
        if path.is_dir():
            if target.is_symlink():
                target.unlink()
            target.mkdir(exist_ok=True)
        else:
            os.replace(path, target)
