"""Reading `Pulumi.<stack>.yaml` without Pulumi: the CLI, tests and the verifier use this."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from infra.topology import ConfigError, Topology, from_config

ROOT = Path(__file__).resolve().parent.parent


class UnknownStack(ConfigError):
    pass


def cache_dir() -> Path:
    """Where setup and the lab keep their state (jars, pulumi state, lab host dirs)."""
    return Path(os.environ.get("DCDRILL_CACHE", ROOT / ".cache")).resolve()


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))


def load_config(stack: str) -> dict:
    path = ROOT / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise UnknownStack(f"unknown stack {stack!r}; valid: {', '.join(stack_names())}")
    data = yaml.safe_load(path.read_text()) or {}
    return data.get("config") or {}


def load(stack: str) -> Topology:
    return from_config(load_config(stack), stack)


def lab_settings(config: dict) -> dict:
    """`dcdrill:lab`, documented in README: the local lab's knobs with their defaults."""
    raw = config.get("dcdrill:lab") or {}
    return {
        "latency_ms": float(raw.get("latencyMs", 5)),
        "jitter_ms": float(raw.get("jitterMs", 0)),
        "subnet_prefix": str(raw.get("subnetPrefix", "10.77")),
        "broker_heap_mb": int(raw.get("brokerHeapMb", 384)),
        "zookeeper_heap_mb": int(raw.get("zookeeperHeapMb", 96)),
    }
