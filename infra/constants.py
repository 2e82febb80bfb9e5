"""What every layer agrees on, defined once: the profiles, the drill's fixed names, the Kafka
versions, the acks settings, the clock and where dcdrill keeps its state. Ports are the roles'
(infra/ports.py reads them)."""

from __future__ import annotations

import os
import time
from pathlib import Path

# The dcdrill package's folder: <checkout>/dcdrill, or site-packages/dcdrill. Not resolved, so that
# in a checkout its layers are found through its links (dcdrill/__init__.py).
PACKAGE = Path(__file__).parent.parent
# What dcdrill ships beside its Python (roles/, site.yml, the example stacks, the CI recipes): at the
# top of a checkout; under dcdrill/shipped/ in a wheel (pyproject.toml's force-include).
IN_CHECKOUT = (PACKAGE.parent / "site.yml").is_file()
SHIPPED = PACKAGE.parent if IN_CHECKOUT else PACKAGE / "shipped"
PROJECT_FILE = "Pulumi.yaml"

# The promises a stack makes (the verdict checks the drill against its stack's).
PROFILES = ("consistency-first", "availability-first")

# The Kafka versions `make setup` fetches from Maven Central side by side, each to its own folder
# under cache_dir() (infra/toolchain/<folder>-pom.xml): 3.9 is the last with ZooKeeper; 4.3.1 is
# the newest 4.x whose connect-mirror (MirrorMaker 2) is on Maven Central.
KAFKA_VERSIONS = {"3.9.1": "kafka", "4.3.1": "kafka4"}
DEFAULT_KAFKA_VERSION = {"zookeeper": "3.9.1", "kraft": "4.3.1"}


def kafka_release(version: str) -> tuple[int, int]:
    """(major, minor) of a version like 4.3.1: what features and modes depend on."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# The hosts' login user on both backends: unprivileged, it `become`s root through sudo (the lab's
# infra/lab/sshd.py makes it; an AWS host's user data does, infra/aws/hosts.py).
LOGIN_USER = "dcdrill"
# Host access shares one ssh connection a host (infra/observe/hostaccess.py), and sshd takes at
# most MaxSessions sessions on one connection (10 by default): a drill's workload processes, its
# watch and its polls on one client host need more room. Both backends' sshd get these.
SSHD_LIMITS = {"MaxSessions": 100, "MaxStartups": 100}

# The steady-state probe writes one record here (roles/kafka_topics creates it); the workload's
# consumers form this group. The ACL rules check that the workload's user may use both.
CANARY_TOPIC = "dcdrill-canary"
WORKLOAD_GROUP = "dcdrill-verifier"
DRILL_TOPIC_PREFIX = "dcdrill-"

ACKS = ("0", "1", "all")
KAFKA_PYTHON_ACKS = {"all": "all", "1": 1, "0": 0}  # kafka-python takes numbers for 0 and 1


def now_ms() -> int:
    """Wall-clock milliseconds: what every ledger row and fault line carries."""
    return time.time_ns() // 1_000_000


def write_json_atomically(path: Path, data) -> None:
    """`data` as JSON in `path`, through a temporary file, fsync and rename, then an fsync of the
    folder so the rename itself survives a crash: the old file or the new one, never a torn one
    or none (the fault state and its copies, open drills, the lab's state files)."""
    import json

    write_text_atomically(path, json.dumps(data, indent=2, sort_keys=True))


def write_text_atomically(path: Path, text: str) -> None:
    """`text` in `path` as write_json_atomically writes: the old file or the new one after a crash."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


class BadStateFile(ValueError):
    """A state file dcdrill wrote is not what it wrote (exit 2): the message names the file."""


def read_state_json(path: Path, default=None, kind: type | None = None):
    """A state file's JSON (`default` when there is none), or BadStateFile naming the file, what is
    wrong with it and what to do, never a traceback. `kind`: the type its top level must be."""
    import json

    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return default
    except (OSError, UnicodeDecodeError) as exc:
        raise BadStateFile(f"{path}: cannot be read ({exc}); restore it, or remove it to start afresh") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadStateFile(f"{path}: not JSON ({exc}); restore it, or remove it to start afresh") from exc
    if kind is not None and not isinstance(data, kind):
        raise BadStateFile(
            f"{path}: holds a JSON {type(data).__name__}, not a {kind.__name__}; "
            "restore it, or remove it to start afresh"
        )
    return data


class NoProject(ValueError):
    """No Pulumi.yaml here or above: a bad input (exit 2) that says how to make one."""


def project_dir() -> Path:
    """The user's project, found the way `pulumi` finds it: DCDRILL_PROJECT, else the nearest folder
    at or above the current one with a Pulumi.yaml, else (run from a checkout) the checkout. Here,
    not in the command layer: a plain `chaos run` of dcdrill's activities has no command above it."""
    if os.environ.get("DCDRILL_PROJECT"):
        return Path(os.environ["DCDRILL_PROJECT"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    if IN_CHECKOUT:
        return PACKAGE.parent.resolve()
    raise NoProject(f"no {PROJECT_FILE} in {here} or any folder above it: `dcdrill init` makes a project there")


def child_env() -> dict:
    """The environment of a dcdrill child process (workload, chaos, services): it imports the same
    package and works on the same project, whatever folder it starts in."""
    path = os.pathsep.join(p for p in (str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "DCDRILL_PROJECT": str(project_dir())}


# What in the cache is a tool (jars, binaries, the verifier's kernels and class-data archives,
# Pulumi's plugins): safe to keep between CI jobs, and all the CI recipes cache (docs/ci). Globs
# relative to cache_dir().
TOOL_PATHS = (
    "bin",
    "kafka",
    "kafka4",
    "s3a",
    "agent",
    "spark-kernel",
    "spark-cds-*.jsa",
    "stamps",
    "pulumi-home/plugins",
)
# A stack's state (stacks/: keys, passwords, inventories; lab/: the lab's hosts and its ssh keys;
# pulumi-state/; secrets/; locks/): never cached, in a folder of its own (state_dir()).
STATE_PATHS = ("stacks", "lab", "pulumi-state", "pulumi-root", "secrets", "locks")


def cache_dir() -> Path:
    """Where setup keeps the tools (TOOL_PATHS: jars, binaries, kernels): DCDRILL_CACHE, else .cache/
    in a checkout, else the user's cache folder (XDG_CACHE_HOME/dcdrill). One per machine, not per
    project. Nothing in it is secret: a CI cache may hold it whole."""
    if os.environ.get("DCDRILL_CACHE"):
        return Path(os.environ["DCDRILL_CACHE"]).resolve()
    if IN_CHECKOUT:
        return PACKAGE.parent / ".cache"
    return (Path(os.environ.get("XDG_CACHE_HOME") or _home() / ".cache") / "dcdrill").resolve()


def state_dir() -> Path:
    """Where the stacks' state lives (STATE_PATHS: keys, passwords, Pulumi state, the lab's hosts),
    apart from the tools, so that no cache of the tools can hold it: DCDRILL_STATE, else beside
    DCDRILL_CACHE (<cache>-state), else .state/ in a checkout, else XDG_STATE_HOME/dcdrill. One per
    machine: the lab's namespaces are the machine's too."""
    if os.environ.get("DCDRILL_STATE"):
        return Path(os.environ["DCDRILL_STATE"]).resolve()
    if os.environ.get("DCDRILL_CACHE"):
        cache = Path(os.environ["DCDRILL_CACHE"]).resolve()
        return cache.with_name(cache.name + "-state")
    if IN_CHECKOUT:
        return PACKAGE.parent / ".state"
    return (Path(os.environ.get("XDG_STATE_HOME") or _home() / ".local" / "state") / "dcdrill").resolve()


def _home() -> Path:
    """The home of the user who ran dcdrill: under `sudo`, the invoking user's (sudo resets HOME
    to root's, which would be another cache than the one `dcdrill setup` filled)."""
    user = os.environ.get("SUDO_USER")
    if user and os.geteuid() == 0:
        import pwd

        try:
            return Path(pwd.getpwnam(user).pw_dir)
        except KeyError:
            pass
    return Path.home()
