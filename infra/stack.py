"""Reading `Pulumi.<stack>.yaml` without Pulumi (the CLI, tests and the drill use this), and the
backend each stack names."""

from __future__ import annotations

import yaml

from dcdrill.infra import deployment as deployments
from dcdrill.infra import mirror_rules, rules, schema
from dcdrill.infra.aws.backend import AwsBackend
from dcdrill.infra.backend import Backend
from dcdrill.infra.constants import PROJECT_FILE, NoProject, project_dir
from dcdrill.infra.lab.backend import LabBackend
from dcdrill.infra.topology import ConfigError, Topology

BACKENDS: dict[str, type[Backend]] = {"local": LabBackend, "aws": AwsBackend}


class UnknownStack(ConfigError):
    pass


def stack_names() -> list[str]:
    """The project's stacks (Pulumi.<stack>.yaml beside its Pulumi.yaml); none outside a project."""
    try:
        folder = project_dir()
    except NoProject:
        return []
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


MAX_STACK_BYTES = 1 << 20
MAX_YAML_ALIASES = 100  # anchors expand in place: a few nested ones make a billion-entry config


def load_config(stack: str) -> dict:
    folder = project_dir()
    path = folder / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise UnknownStack(
            f"unknown stack {stack!r} in {folder / PROJECT_FILE}'s folder; "
            f"valid: {', '.join(stack_names()) or 'none (dcdrill init writes the examples)'}"
        )
    if path.stat().st_size > MAX_STACK_BYTES:
        raise ConfigError(f"{path}: {path.stat().st_size:,} bytes; a stack file is at most {MAX_STACK_BYTES:,}")
    try:
        text = path.read_text()
        if sum(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=yaml.SafeLoader)) > MAX_YAML_ALIASES:
            raise ConfigError(f"{path}: more than {MAX_YAML_ALIASES} YAML aliases")
        data = yaml.safe_load(text)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise ConfigError(f"{path}: must be a mapping with a config: mapping inside (Pulumi's stack file shape)")
    return data.get("config") or {}


def backend_of(config: dict) -> Backend:
    return BACKENDS[schema.parse(config).backend](config)


def topology_of(config: dict, stack: str = "") -> Topology:
    """The stack's cluster: a replicated stack's home cluster (deployment_of has them all)."""
    return deployment_of(config, stack).home


def load(stack: str) -> Topology:
    """The stack's cluster: a replicated stack's home cluster (load_deployment has them all)."""
    return topology_of(load_config(stack), stack)


def deployment_of(config: dict, stack: str = "") -> deployments.Deployment:
    return deployments.from_config(config, stack, default_domain=backend_of(config).default_domain)


def load_deployment(stack: str) -> deployments.Deployment:
    return deployment_of(load_config(stack), stack)


def resolved(d: deployments.Deployment) -> dict:
    """The resolved stack (topology.json, RECORD.md): the home cluster's keys as a stretched
    stack's, and on a replicated stack its `clusters` and `mirrors` too."""
    out = rules.resolved(d.home)
    return {**out, **mirror_rules.resolved(d)} if d.replicated else out


def drill_topology(stack: str, d: deployments.Deployment) -> dict:
    """What a drill record's topology.json holds (RECORD.md), the one builder of it: the resolved
    stack under the drill's own settings, its name, and what the network adds to produce latency
    where the backend sets its inter-DC delay."""
    out = resolved(d) | {"stack": stack}
    one_way = backend(stack).one_way_ms(d.home)
    if one_way is not None:
        out["produce_latency"] = rules.produce_latency(d.home, one_way)
    return out


def backend(stack: str) -> Backend:
    return backend_of(load_config(stack))
