"""A Chaos Toolkit control that makes a fault that was not injected fail the experiment.

Chaos Toolkit records an action that raised (ActivityFailed) as a failed activity, carries on
with the method, and `chaos run` still exits 0: the experiment "completed", proving nothing.
Controls may interrupt a run. This one does, after a fault action of chaos.faults.actions fails
in the method: the rest of the method is skipped, the rollbacks (heal) still play, the journal's
status is "interrupted" and `chaos run` exits 1. A heal that fails in the rollbacks interrupts
too, once every rollback has had its turn. Declared in every experiment's `controls`
(chaos/experiments/_drill.json).
"""

from __future__ import annotations

from chaoslib.exceptions import InterruptExecution

from dcdrill.chaos import session

__all__ = ["after_activity_control", "before_rollback_control", "after_rollback_control"]

FAULT_MODULE = "dcdrill.chaos.faults.actions"


def after_activity_control(
    context: dict, state: dict, configuration: dict = None, secrets: dict = None, **kwargs
) -> None:
    """Interrupt the method when one of its fault actions failed."""
    provider = context.get("provider") or {}
    drill = session.given(configuration)
    if (
        (drill and drill.rolling_back)
        or provider.get("module") != FAULT_MODULE
        or (state or {}).get("status") == "succeeded"
    ):
        return
    reason = ((state or {}).get("exception") or ["(no exception recorded)"])[-1].strip()
    raise InterruptExecution(f"fault action {context.get('name')!r} failed, nothing more to prove: {reason}")


def before_rollback_control(context: dict, configuration: dict = None, secrets: dict = None, **kwargs) -> None:
    if drill := session.given(configuration):
        drill.rolling_back = True


def after_rollback_control(
    context: dict, state: list, configuration: dict = None, secrets: dict = None, **kwargs
) -> None:
    """Interrupt (after every rollback ran) when one of them failed: the lab may not be healed."""
    failed = [r["activity"].get("name") for r in state or [] if r.get("status") != "succeeded"]
    if failed:
        raise InterruptExecution(f"rollbacks failed: {', '.join(failed)}; the stack may not be healed")
