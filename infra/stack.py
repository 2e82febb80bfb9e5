"""Reading `Pulumi.<stack>.yaml` without Pulumi (the CLI, tests and the drill use this), and the
backend each stack names."""
from __future__ import annotations

import yaml

from infra.aws.backend import AwsBackend
from infra.backend import Backend
from infra.constants import ROOT
from infra.lab.backend import LabBackend
from infra.topology import ConfigError, Topology, from_config

BACKENDS: dict[str, type[Backend]] = {"local": LabBackend, "aws": AwsBackend}


class UnknownStack(ConfigError):
    pass


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))


def load_config(stack: str) -> dict:
    path = ROOT / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise UnknownStack(f"unknown stack {stack!r}; valid: {', '.join(stack_names())}")
    data = yaml.safe_load(path.read_text()) or {}
    return data.get("config") or {}


def backend_of(config: dict) -> Backend:
    name = str(config.get("dcdrill:backend", "local"))
    if name not in BACKENDS:
        raise ConfigError(f"dcdrill:backend is {name!r}; valid: {', '.join(BACKENDS)}")
    return BACKENDS[name](config)


def topology_of(config: dict, stack: str = "") -> Topology:
    return from_config(config, stack, default_domain=backend_of(config).default_domain)


def load(stack: str) -> Topology:
    return topology_of(load_config(stack), stack)


def backend(stack: str) -> Backend:
    return backend_of(load_config(stack))
