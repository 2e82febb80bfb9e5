"""What every layer agrees on, defined once: exit codes, ports, the drill's fixed names, the
acks settings, the clock and where dcdrill keeps its state."""
from __future__ import annotations

import os
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent  # where dcdrill's packages sit: a checkout, or site-packages
# What dcdrill ships beside its Python (roles/, site.yml, the example stacks, the CI recipes): at the
# top of a checkout; under dcdrill/shipped/ in a wheel (pyproject.toml's force-include).
SHIPPED = SOURCE if (SOURCE / "site.yml").is_file() else SOURCE / "dcdrill" / "shipped"
IN_CHECKOUT = SHIPPED == SOURCE
PROJECT_FILE = "Pulumi.yaml"
# The heavy parts are extras (pyproject.toml): the modules that each brings.
EXTRAS = {"pyspark": "verify", "matplotlib": "verify", "junitparser": "verify", "pulumi_aws": "aws", "boto3": "aws"}

# Exit codes of every `dcdrill` command (and of `spark-submit spark/verify.py`).
EXIT_PASS = 0  # verdict pass, or the command did what it was asked
EXIT_FAIL = 1  # verdict fail
EXIT_BAD_INPUT = 2  # bad input: a stack, a setting, an experiment or a drill record
EXIT_NO_FAULT = 3  # the fault was not injected, or its heal failed: the drill proves nothing
EXIT_NOT_STEADY = 4  # the steady state was not met before the fault

# Listeners (roles/kafka_broker/defaults) and ZooKeeper's ports (roles/zookeeper/defaults).
# KRaft controllers listen on CONTROLLER_PORT only.
CLIENT_PORT, REPLICATION_PORT, CONTROLLER_PORT = 9092, 9093, 9094
ZOOKEEPER_CLIENT_PORT, ZOOKEEPER_PORTS = 2181, (2181, 2888, 3888)

# The Kafka versions `make setup` fetches from Maven Central side by side, each to its own folder
# under cache_dir() (infra/toolchain/<folder>-pom.xml): 3.9 is the last with ZooKeeper; 4.3.1 is
# the newest 4.x whose connect-mirror (MirrorMaker 2) is on Maven Central.
KAFKA_VERSIONS = {"3.9.1": "kafka", "4.3.1": "kafka4"}
DEFAULT_KAFKA_VERSION = {"zookeeper": "3.9.1", "kraft": "4.3.1"}


def kafka_release(version: str) -> tuple[int, int]:
    """(major, minor) of a version like 4.3.1: what features and modes depend on."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# The steady-state probe writes one record here (roles/kafka_topics creates it); the workload's
# consumers form this group. The ACL rules check that the workload's user may use both.
CANARY_TOPIC = "dcdrill-canary"
MIRROR_REST_PORT = 8083  # MirrorMaker 2's internal REST (roles/kafka_mirror kafka_mirror_rest_port)
WORKLOAD_GROUP = "dcdrill-verifier"
DRILL_TOPIC_PREFIX = "dcdrill-"

ACKS = ("0", "1", "all")
KAFKA_PYTHON_ACKS = {"all": "all", "1": 1, "0": 0}  # kafka-python takes numbers for 0 and 1


def now_ms() -> int:
    """Wall-clock milliseconds: what every ledger row and fault line carries."""
    return time.time_ns() // 1_000_000


class NoProject(ValueError):
    """No Pulumi.yaml here or above: a bad input (exit 2) that says how to make one."""


def project_dir() -> Path:
    """The user's project, found the way `pulumi` finds it: DCDRILL_PROJECT, else the nearest folder
    at or above the current one with a Pulumi.yaml, else (run from a checkout) the checkout."""
    if os.environ.get("DCDRILL_PROJECT"):
        return Path(os.environ["DCDRILL_PROJECT"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    if IN_CHECKOUT:
        return SOURCE
    raise NoProject(f"no {PROJECT_FILE} in {here} or any folder above it: `dcdrill init` makes a project there")


def child_env() -> dict:
    """The environment of a dcdrill child process (workload, chaos, services): it imports the same
    packages and finds the same project, whatever folder it starts in."""
    path = os.pathsep.join(p for p in (str(SOURCE), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "DCDRILL_PROJECT": str(project_dir())}


def cache_dir() -> Path:
    """Where setup and the lab keep their state (jars, Pulumi state, lab host dirs): DCDRILL_CACHE,
    else .cache/ in a checkout, else the user's cache folder (XDG_CACHE_HOME/dcdrill). One per
    machine, not per project: the lab's namespaces are the machine's too."""
    if os.environ.get("DCDRILL_CACHE"):
        return Path(os.environ["DCDRILL_CACHE"]).resolve()
    if IN_CHECKOUT:
        return SOURCE / ".cache"
    return (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dcdrill").resolve()
