"""Faults behind one protocol (chaos/faults/driver.py), one driver per backend, and the Chaos
Toolkit actions that every experiment names whatever the backend (chaos/faults/actions.py)."""

from __future__ import annotations

from dcdrill.chaos.faults.aws import AwsFaults
from dcdrill.chaos.faults.driver import FaultDriver
from dcdrill.chaos.faults.lab import LabFaults
from dcdrill.infra.backend import Backend

DRIVERS: dict[str, type[FaultDriver]] = {"local": LabFaults, "aws": AwsFaults}  # by Backend.name


def driver_class(backend: Backend) -> type[FaultDriver]:
    try:
        return DRIVERS[backend.name]
    except KeyError:
        raise ValueError(f"no fault driver for the {backend.name!r} backend; drivers: {', '.join(DRIVERS)}") from None
