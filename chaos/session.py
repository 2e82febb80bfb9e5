"""What one drill's activities share inside its `chaos run` process. Chaos Toolkit calls each
activity as a plain function, so what one starts and a later one stops (the workload, the
coordination watch), the hypothesis's last cluster status, and whether the rollbacks have begun
live in one DrillSession per drill record, found by the record's folder (`run_dir`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcdrill.chaos import context


@dataclass
class DrillSession:
    run_dir: Path
    workload: Any = None  # validation.workload.Workload, once start_workload ran
    watch: Any = None  # chaos.kafka.watch.CoordinationWatch, between watch and stop_watching
    statuses: dict[tuple, tuple[float, dict]] = field(default_factory=dict)  # (stack, side): (when, status)
    rolling_back: bool = False  # the rollbacks (heal) have begun: a fault's failure no longer interrupts


_SESSIONS: dict[Path, DrillSession] = {}


def of(configuration: dict | None) -> DrillSession:
    """The session of the drill record `configuration` names (made at its first activity)."""
    run = context.run_dir(configuration).resolve()
    return _SESSIONS.setdefault(run, DrillSession(run))


def given(configuration: dict | None) -> DrillSession | None:
    """The drill's session, or None when `configuration` names no drill record (a probe run alone)."""
    return of(configuration) if (configuration or {}).get("run_dir") else None
