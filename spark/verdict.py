"""The verdict: the counts against what the topology promised (topology.json). Pure Python.

Always: no phantoms, no failed record present; no acknowledged-offset mismatch and no divergent
offsets unless unclean election is on (then truncation may legitimately move records).
consistency-first: no acknowledged record lost.
availability-first: loss is allowed (and reported with its window), but writes must have
continued during every fault: every partition acknowledged again before the fault was healed
(`writes_continued`, spark/rollup.py). Records sent during the fault but acknowledged only
after the heal do not count: the promise is about the cluster taking writes while the DC is gone.
"""

from __future__ import annotations

# Faults that take a whole DC away: the topology's prediction for losing that DC applies to them.
from dcdrill.record.contents import DC_LOSS_FAULTS


def rules_for(topology: dict) -> list[tuple[str, str]]:
    """(rule name, description) in the order the report and junit.xml show them."""
    out = [
        ("no-phantoms", "phantoms = 0: the log holds no record nobody produced"),
        ("no-failed-present", "failed_present = 0: a record the client was told failed is not in the log"),
    ]
    if not topology.get("unclean_leader_election"):
        out += [
            ("acked-offsets-match", "ack_offset_mismatch = 0: every acknowledged offset holds its record"),
            ("no-divergent-offsets", "divergent_offsets = 0: consumers saw the log the audit read"),
        ]
    if topology.get("profile") == "consistency-first":
        out.append(("no-acked-loss", "acked_lost = 0: consistency-first loses no acknowledged record"))
    if topology.get("profile") == "availability-first":
        out.append(
            (
                "writes-continued",
                "availability-first: every partition acknowledged writes again before each fault was healed",
            )
        )
    return out


# A record with transactions (spark/transactions.py), consistency-first: each must be all or nothing.
TRANSACTION_RULES = (
    ("no-lost-commits", "lost_commits", "lost_commits = 0: every transaction told committed is in the log"),
    ("no-torn-transactions", "torn_transactions", "torn_transactions = 0: a committed transaction is whole in the log"),
    ("unknown-all-or-nothing", "unknown_torn", "unknown_torn = 0: a transaction of unknown outcome is all or nothing"),
    ("no-aborted-in-log", "aborted_in_log", "aborted_in_log = 0: read committed, no aborted transaction's record"),
    ("no-aborted-reads", "aborted_reads", "aborted_reads = 0: no read-committed consumer got an aborted record"),
)


def evaluate(topology: dict, summary: dict) -> tuple[str, list[dict], list[dict]]:
    """(verdict, violations, results per rule)."""
    c = summary["counts"]
    checks = {
        "no-phantoms": ("phantoms", c["phantoms"], 0),
        "no-failed-present": ("failed_present", c["failed_present"], 0),
        "acked-offsets-match": ("ack_offset_mismatch", c["ack_offset_mismatch"], 0),
        "no-divergent-offsets": ("divergent_offsets", c["divergent_offsets"], 0),
        "no-acked-loss": ("acked_lost", c["acked_lost"], 0),
    }
    results = []
    for rule, description in rules_for(topology):
        if rule == "writes-continued":
            faults = summary.get("faults") or []
            stalled = [f for f in faults if not f["writes_continued"]]
            ok = bool(faults) and not stalled
            numbers = {
                "faults": [
                    {
                        k: f.get(k)
                        for k in (
                            "fault",
                            "target",
                            "recovery_ms",
                            "held_ms",
                            "partitions_acking_after_start",
                            "partitions",
                        )
                    }
                    for f in faults
                ]
            }
            message = (
                "no fault in the record"
                if not faults
                else ("; ".join(map(_stalled_text, stalled)) if stalled else "writes continued during every fault")
            )
        else:
            name, value, limit = checks[rule]
            ok = value <= limit
            numbers = {name: value, "allowed": limit}
            message = f"{name} = {value}" + ("" if ok else f" (allowed {limit})")
            if rule == "no-acked-loss" and not ok and summary.get("data_loss_window"):
                numbers["data_loss_window"] = summary["data_loss_window"]
        results.append({"rule": rule, "description": description, "passed": ok, "message": message, "numbers": numbers})
    transactions = summary.get("transactions")
    if transactions and topology.get("profile") == "consistency-first":
        for rule, name, description in TRANSACTION_RULES:
            value = transactions["counts"][name]
            message = f"{name} = {value}" + ("" if value == 0 else " (allowed 0)")
            numbers = {name: value, "allowed": 0}
            result = {"rule": rule, "description": description, "passed": value == 0}
            results.append(result | {"message": message, "numbers": numbers})
    violations = [
        {"rule": r["rule"], "message": r["message"], "numbers": r["numbers"]} for r in results if not r["passed"]
    ]
    if topology.get("clusters"):  # a replicated record: the mirrors' and failovers' promises too
        for v in mirror_violations(summary):
            results.append({**v, "description": v["rule"], "passed": False})
            violations.append(v)
    return ("fail" if violations else "pass"), violations, results


def prediction_checks(topology: dict, summary: dict) -> list[dict]:
    """For each DC-loss fault: what the topology model predicted for losing that DC (`dcdrill
    plan`) beside what the drill observed. Information for the reader, not a verdict rule: the
    rules above are the profile's promise; this says whether the model of the cluster was right.
    Writes "continued" as the availability rule reads it: `writes_continued` (spark/rollup.py)."""
    predictions = topology.get("predictions") or {}
    losses = [
        (f, _for_fault(predictions.get(f.get("target")), f.get("fault")))
        for f in summary.get("faults", [])
        if f.get("fault") in DC_LOSS_FAULTS and predictions.get(f.get("target")) is not None
    ]
    # A drill's acknowledged losses cannot be told apart between its DC losses: any that allows one covers them.
    loss_allowed = any(p["acked_loss_possible"] for _, p in losses)
    out = []
    for f, p in losses:
        continued, lost = f["writes_continued"], summary["counts"]["acked_lost"]
        observed = {
            "writable": continued,
            "acked_loss": lost > 0,
            "recovery_ms": f.get("recovery_ms"),
            "held_ms": f.get("held_ms"),
        }
        # With another DC gone too, writes measure both losses, not this one's prediction.
        writes_as_predicted = continued == p["writable"] or len(losses) > 1
        check = {
            "fault": f["fault"],
            "target": f["target"],
            "predicted": p,
            "observed": observed,
            "as_predicted": writes_as_predicted and (lost == 0 or loss_allowed),
        }
        caveats = [
            c
            for c in (
                _isr_caveat(f.get("isr_at_start")),
                f"one of {len(losses)} DC losses of this drill: their acknowledged losses are counted "
                "together, and writes are not compared with one DC's prediction"
                if len(losses) > 1
                else None,
            )
            if c
        ]
        if caveats:
            check["caveat"] = "; ".join(caveats)
        out.append(check)
    return out


def _for_fault(p: dict | None, fault: str) -> dict | None:
    """A DC's prediction with the acknowledged loss of this way of losing it (rules.predictions
    `faults`; a record written before those has the kill's only)."""
    if p is None:
        return None
    by_fault = (p.get("faults") or {}).get(fault)
    return {k: v for k, v in {**p, **(by_fault or {})}.items() if k != "faults"}


def _isr_caveat(isr: dict | None) -> str | None:
    """The model predicts for a full ISR (chaos/faults/actions.isr_snapshot: taken just before the fault)."""
    if not isr or isr["in_sync"] >= isr["partitions"]:
        return None
    return (
        f"the prediction assumes every replica in sync when the DC went; {isr['partitions'] - isr['in_sync']} "
        f"of {isr['partitions']} partitions had one out of sync"
    )


def _stalled_text(f: dict) -> str:
    name = f"{f.get('fault')} {f.get('target')}"
    if f.get("recovery_ms") is None:
        return (
            f"{name}: {f['partitions_acking_after_start']} of {f['partitions']} partitions acknowledged "
            "anything after the fault started"
        )
    return (
        f"{name}: the slowest partition acknowledged again {f['recovery_ms'] / 1000:.1f} s after the start, "
        f"not before the heal ({f['held_ms'] / 1000:.1f} s)"
    )


# Which of a flow's predictions (infra/mirror_rules.flow_predictions) a fault puts to the test.
MIRROR_FAULT_PREDICTION = {
    "kill-dc": "source-dc-loss",
    "stop-dc": "source-dc-loss",
    "power-loss": "source-dc-loss",
    "isolate-dc": "link-cut",
    "kill-mirror": "mirror-kill",
}


def mirror_prediction_checks(topology: dict, summary: dict) -> list[dict]:
    """Per flow and fault, what `dcdrill plan` predicted (topology.json `mirrors[<flow>].predictions`)
    beside what the drill saw. Acknowledged records missing from the target: at the failover (or
    the source's loss) for a source-DC loss, the RPO; for a cut or a killed MM2, still missing once
    MM2 caught up (those faults only delay the copy). Source writes: the fault's own reading, when
    it hit a DC of the source. Information, like prediction_checks, not a verdict rule."""
    clusters, out = topology.get("clusters") or {}, []
    for name, flow in (topology.get("mirrors") or {}).items():
        m = (summary.get("mirrors") or {}).get(name)
        if m is None:
            continue
        source_dcs = {dc["name"] for dc in clusters.get(flow["source"], {}).get("datacenters", [])}
        target_dcs = {dc["name"] for dc in clusters.get(flow["target"], {}).get("datacenters", [])}
        for f in summary.get("faults", []):
            key = MIRROR_FAULT_PREDICTION.get(f.get("fault"))
            hit = {
                "source-dc-loss": f.get("target") in source_dcs,
                "link-cut": f.get("target") in source_dcs | target_dcs,
                "mirror-kill": f.get("target") == flow.get("host"),
            }.get(key, False)
            p = (flow.get("predictions") or {}).get(key)
            if not hit or p is None:
                continue
            missing = m["rpo"]["records"] if key == "source-dc-loss" else m["counts"]["not_mirrored"]
            observed = {"acked_missing": missing or 0}
            if f.get("target") in source_dcs and "writes_continued" in f:
                observed["source_writable"] = f["writes_continued"]
            ok = (not missing or p["acked_loss_possible"]) and observed.get(
                "source_writable", p["source_writable"]
            ) == p["source_writable"]
            out.append(
                {
                    "flow": name,
                    "fault": f["fault"],
                    "target": f["target"],
                    "prediction": key,
                    "predicted": p,
                    "observed": observed,
                    "as_predicted": ok,
                }
            )
    return out


def mirror_violations(summary: dict) -> list[dict]:
    """The replicated stack's promises, whatever the fault: MM2 finishes its copy once the source
    is back (nothing acknowledged is missing from the target after the catch-up), no record comes
    back to its origin, and a failed-over consumer group skips nothing."""
    out = []
    for name, m in (summary.get("mirrors") or {}).items():
        n = m["counts"]["not_mirrored"]
        if n:
            out.append(
                {
                    "rule": "mirror-complete",
                    "message": f"{name}: {n} acknowledged records never reached {m['remote_topic']}",
                    "numbers": {"not_mirrored": n},
                }
            )
    for cluster, n in (summary.get("mirror_loops") or {}).items():
        if n:
            out.append(
                {
                    "rule": "no-mirror-loops",
                    "message": f"{cluster}: {n} of its own records came back",
                    "numbers": {"mirror_loops": n},
                }
            )
    for fo in summary.get("failovers") or []:
        if fo["failover_skipped"]:
            out.append(
                {
                    "rule": "failover-skips-nothing",
                    "message": f"{fo['group']} {fo['from']}->{fo['to']}: {fo['failover_skipped']} records skipped",
                    "numbers": {"failover_skipped": fo["failover_skipped"]},
                }
            )
    return out
