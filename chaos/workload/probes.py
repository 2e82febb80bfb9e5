"""Is the workload making progress? Used in the steady-state hypothesis and after the fault."""
from __future__ import annotations

import time

from chaos import context
from chaos.workload.actions import _running
from infra.constants import CANARY_TOPIC, KAFKA_PYTHON_ACKS

__all__ = ["workload_progressing"]


def workload_progressing(within_s: float = 15, configuration: dict = None, secrets: dict = None) -> bool:
    """True when the running workload's acknowledged count grows within `within_s` seconds.
    With no workload running (the hypothesis before the method), one canary record must be
    acknowledged with the stack's acks instead."""
    w = _running.get(str(context.run_dir(configuration)))
    if w is None:
        return _canary(configuration, within_s)
    before = w.status()["ok"]
    deadline = time.monotonic() + float(within_s)
    while time.monotonic() < deadline:
        time.sleep(1)
        if w.status()["ok"] > before:
            return True
    return False


def _canary(configuration, within_s: float) -> bool:
    from kafka import KafkaProducer

    t = context.topology(configuration)
    inv = context.inventory(configuration)
    try:
        p = KafkaProducer(bootstrap_servers=inv.bootstrap_servers(), acks=KAFKA_PYTHON_ACKS[t.acks],
                          bootstrap_timeout_ms=int(within_s * 1000), max_block_ms=int(within_s * 1000),
                          **inv.client_security())
        try:
            p.send(CANARY_TOPIC, b"canary").get(timeout=within_s)
            return True
        finally:
            p.close(timeout=2)
    except Exception:  # noqa: BLE001 - any failure means no progress
        return False
