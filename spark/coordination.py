"""How the coordination moved during each DC loss, from the drill's coordination log
(coordination.jsonl, RECORD.md): a pure function of the record, like every count.

For a fault with a target DC it gives
- the quorum's leader before the fault and after it, and when a new leader was first seen
  (`leader_change_ms`, from the fault's start; null when the leader did not have to move);
- how long the quorum had no leader, or a leader without a majority, during the fault
  (`quorum_lost_ms`: metadata stalled), and how much of that only DescribeQuorum went unanswered
  while the brokers answered (`quorum_unanswered_ms`, KRaft): a broker forwards it to the
  controller it last knew, and after that controller's DC is cut off the request waits out the
  broker's forwarding timeout, with a new leader already elected (docs/evidence.md);
- when each of the DC's brokers left the cluster's live brokers (`fenced_ms`: ZooKeeper
  session expiry, or the KRaft controller's fencing), and the slowest (`fencing_ms`);
- in ZooKeeper mode, when the Kafka controller (a broker) moved, if it was in the DC.
Times are when the sample that first showed the change had its answers: an upper bound, within
the log's sampling interval (`resolution_ms`) of the event.
"""

from __future__ import annotations

from statistics import median

from dcdrill.record.contents import DC_LOSS_FAULTS


def _dc_of(topology: dict) -> dict:
    return {h["name"]: h["dc"] for h in topology.get("hosts") or []}


def _brokers_in(topology: dict, dc: str) -> list[int]:
    return sorted(
        h["node_id"] for h in topology.get("hosts") or [] if h.get("role") == "kafka_broker" and h.get("dc") == dc
    )


def _informative(samples: list[dict], topology: dict) -> list[dict]:
    """On KRaft the leader comes from the cluster's answer: a sample no broker answered says
    nothing of it and is left out (ZooKeeper's nodes answer for themselves)."""
    if topology.get("coordination") != "kraft":
        return samples
    return [s for s in samples if s.get("answered", True)]


def _has_quorum(sample: dict) -> bool:
    return sample["leader"] is not None and sample.get("quorum", True) is not False


def _unanswered(sample: dict) -> bool:
    """A KRaft sample the brokers answered whose DescribeQuorum did not (its error says why)."""
    return sample["leader"] is None and sample.get("answered", True) and bool(sample.get("error"))


def fault_coordination(samples: list[dict], fault: dict, topology: dict) -> dict | None:
    """The coordination's moves for one fault (None: the fault is not a DC loss, or no samples
    reach both sides of its start)."""
    if fault.get("fault") not in DC_LOSS_FAULTS:
        return None
    start, end = fault["start_ms"], fault.get("end_ms")
    samples = _informative(samples, topology)
    before = [s for s in samples if s["at_ms"] < start]
    during = [s for s in samples if s["at_ms"] >= start and (end is None or s["at_ms"] <= end)]
    if not before or not during:
        return None
    dc_of, target = _dc_of(topology), fault["target"]
    last = before[-1]
    leader_before = last["leader"]
    must_move = leader_before is None or dc_of.get(leader_before) == target
    new = next((s for s in during if _has_quorum(s) and s["leader"] != leader_before), None)
    # Time without quorum (no leader, or a leader without a majority serving), counted between
    # samples: each gap is charged to the earlier sample.
    lost = unanswered = 0
    for a, b in zip(during, during[1:] + [{"at_ms": end or during[-1]["at_ms"]}]):
        if not _has_quorum(a):
            lost += b["at_ms"] - a["at_ms"]
            if topology.get("coordination") == "kraft" and _unanswered(a):
                unanswered += b["at_ms"] - a["at_ms"]
    live_before = set(last["brokers"] or [])
    fenced = {}
    for broker in _brokers_in(topology, target):
        if broker not in live_before:
            continue
        seen = next((s for s in during if s["brokers"] is not None and broker not in s["brokers"]), None)
        fenced[str(broker)] = None if seen is None else seen["at_ms"] - start
    controller_change = None
    if last.get("controller") is not None and last["controller"] in _brokers_in(topology, target):
        moved = next((s for s in during if s.get("controller") not in (None, -1, last["controller"])), None)
        controller_change = None if moved is None else moved["at_ms"] - start
    gaps = [b["at_ms"] - a["at_ms"] for a, b in zip(samples, samples[1:])]
    after = new["leader"] if new else (during[-1]["leader"])
    # The drill topic's ISRs (samples with `isr`): when the first one shrank after the start, and
    # when all were full again after the heal.
    shrunk = next((s for s in during if s.get("isr") and s["isr"]["in_sync"] < s["isr"]["partitions"]), None)
    healed = [s for s in samples if end is not None and s["at_ms"] > end and s.get("isr")]
    full = next((s for s in healed if s["isr"]["in_sync"] == s["isr"]["partitions"]), None)
    return {
        "leader_before": leader_before,
        "leader_before_dc": dc_of.get(leader_before),
        "leader_after": after,
        "leader_after_dc": dc_of.get(after),
        "leader_had_to_move": must_move,
        "leader_change_ms": None if new is None else new["at_ms"] - start,
        "quorum_lost_ms": lost,
        "quorum_unanswered_ms": unanswered,
        "fenced_ms": fenced,
        "fencing_ms": max(fenced.values()) if fenced and None not in fenced.values() else None,
        "controller_change_ms": controller_change,
        "isr_shrunk_ms": None if shrunk is None else shrunk["at_ms"] - start,
        "isr_full_after_heal_ms": None if full is None else full["at_ms"] - end,
        "resolution_ms": round(median(gaps)) if gaps else None,
        "samples": len(during),
    }


def attach(summary_faults: list[dict], samples: list[dict], topology: dict) -> None:
    """Each fault of the summary gains `coordination` (fault_coordination), where it has one."""
    for f in summary_faults:
        moves = fault_coordination(samples, f, topology)
        if moves is not None:
            f["coordination"] = moves


def timeline(samples: list[dict], topology: dict) -> list[dict]:
    """The log as the report plots it: per sample, when, the leader's DC ("none": no quorum), how
    many brokers were live (None: no broker answered) and how many of the drill topic's
    partitions had every replica in sync (None: not sampled)."""
    dc_of = _dc_of(topology)
    return [
        {
            "at_ms": s["at_ms"],
            "leader_dc": dc_of.get(s["leader"], "none") if _has_quorum(s) else "none",
            "live_brokers": None if s.get("brokers") is None else len(s["brokers"]),
            "in_sync": (s.get("isr") or {}).get("in_sync"),
        }
        for s in _informative(samples, topology)
    ]
