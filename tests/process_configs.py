"""A workload process's config as validation/workload._process_config writes it (its model:
validation/process_config.ProcessConfig), for a cluster that is not there."""

from dataclasses import asdict, fields

from dcdrill.infra.constants import now_ms
from dcdrill.validation.workload import WorkloadSpec

SPEC_KEYS = {f.name for f in fields(WorkloadSpec)}


def process_config(**changes) -> dict:
    spec = WorkloadSpec(**{k: v for k, v in changes.items() if k in SPEC_KEYS})
    told = {
        "bootstrap": ["127.0.0.1:1"],
        "security": {},
        "deadline_ms": now_ms() + 600_000,
        "agent_uid": None,
        "agent_gid": None,
    }
    return {**asdict(spec), **told, **{k: v for k, v in changes.items() if k not in SPEC_KEYS}}
