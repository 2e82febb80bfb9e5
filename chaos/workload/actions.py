"""Start and stop the workload from an experiment. Chaos Toolkit runs every activity in one
process, so the running workload is kept here between activities."""
from __future__ import annotations

from chaos import context
from infra import rules
from validation import workload as wl

__all__ = ["start_workload", "stop_workload", "run_audit", "delete_topic"]

_running: dict[str, wl.Workload] = {}


def start_workload(producers: int = 3, consumers: int = 2, rate: float = 200, record_size: int = 100,
                   retries: int = 0, idempotence: bool = False, topic: str = None,
                   configuration: dict = None, secrets: dict = None) -> dict:
    """Producers and consumers in the background, until stop_workload (no fixed duration)."""
    topic = topic or context.drill_topic(configuration)
    t = context.topology(configuration)
    inv = context.inventory(configuration)
    spec = wl.WorkloadSpec(topic=topic, producers=int(producers), consumers=int(consumers), rate=float(rate),
                           duration_s=None, record_size=int(record_size), acks=t.acks, retries=int(retries),
                           idempotence=bool(idempotence))
    wl.ensure_topic(inv, spec, replication=t.replication, fresh=True)  # the drill's settings (chaos/context.topology)
    run = context.run_dir(configuration)
    resolved = rules.resolved(t)
    one_way = context.backend(configuration).one_way_ms(t)
    if one_way is not None:  # what the network adds to produce latency, for the report
        resolved["produce_latency"] = rules.produce_latency(t, one_way)
    context.record(configuration).write_topology(resolved)
    _running[str(run)] = wl.Workload(run, inv, spec).start()
    return {"producers": spec.producers, "consumers": spec.consumers, "rate_per_producer": spec.rate, "topic": topic}


def stop_workload(configuration: dict = None, secrets: dict = None) -> dict:
    w = _running.pop(str(context.run_dir(configuration)), None)
    if w is None:
        return {"stopped": False}
    codes = w.stop()
    return {"stopped": True, "exit_codes": codes, "status": w.status()}


def run_audit(timeout_s: float = 120, topic: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    topic = topic or context.drill_topic(configuration)
    inv = context.inventory(configuration)
    wl.audit(context.run_dir(configuration), inv, wl.WorkloadSpec(topic=topic), timeout_s=float(timeout_s))
    return {"audit": str(context.run_dir(configuration) / "audit")}


def delete_topic(keep: bool = False, topic: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """The drill's topic, once the audit has copied it into the record: each drill makes one, and
    a long-lived lab would otherwise pile them up (partitions, replicas, heap). `keep` (the
    experiment's keep_topic, `dcdrill drill --keep-topic`) leaves it for a look afterwards."""
    topic = topic or context.drill_topic(configuration)
    if str(keep).lower() in ("1", "true", "yes"):
        return {"topic": topic, "deleted": False}
    try:
        wl.delete_topic(context.inventory(configuration), topic)
    except Exception as exc:  # noqa: BLE001 - housekeeping: the record is complete, the drill stands
        return {"topic": topic, "deleted": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"topic": topic, "deleted": True}
