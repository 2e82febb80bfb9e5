"""What every layer agrees on, defined once: exit codes, ports, the drill's fixed names, the
acks settings, the clock and where dcdrill keeps its state."""
from __future__ import annotations

import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout: roles/, site.yml, Pulumi.*.yaml

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


def cache_dir() -> Path:
    """Where setup and the lab keep their state (jars, Pulumi state, lab host dirs): DCDRILL_CACHE,
    else .cache/ in the checkout."""
    return Path(os.environ.get("DCDRILL_CACHE", ROOT / ".cache")).resolve()
