"""A cluster status (infra/observe/status.py) as the lines `dcdrill status` prints and a wait's
timeout quotes."""

from __future__ import annotations


def render(status: dict) -> str:
    lines = ["brokers:"]
    for b in status["brokers"]:
        lines.append(f"  {b['id']:>3} {b['dc']:<8} {b['host']:<24} {'alive' if b['alive'] else 'DOWN'}")
    q = status["quorum"]
    if q["kind"] == "kraft":
        lines.append(
            f"controller quorum (KRaft): {q['alive']}/{q['total']} voters serving, quorum "
            f"{'yes' if q['quorum'] else 'NO'}, leader {q['leader'] or 'none'}"
            + (f" (epoch {q['leader_epoch']})" if q["leader"] else "")
        )
        for n in q["nodes"]:
            lag = "" if n["lag"] is None else f" lag {n['lag']}"
            lines.append(f"  {n['id']:>5} {n['dc']:<8} {n['host']:<24} {n['mode'] or 'DOWN'}{lag}")
    else:
        lines.append(f"zookeeper: {q['alive']}/{q['total']} serving, quorum {'yes' if q['quorum'] else 'NO'}")
        for n in q["nodes"]:
            lines.append(f"  {n['host']:<24} {n['mode'] or 'DOWN'}")
    lines.append(
        f"partitions: {len(status['partitions'])}, offline {status['offline_partitions']}, "
        f"under-replicated {status['under_replicated_partitions']}, "
        f"off their preferred leader {status['off_preferred_leader']}"
    )
    for p in status["partitions"]:
        if not p["topic"].startswith("__"):
            lines.append(
                f"  {p['topic']}-{p['partition']}: leader {p['leader']} ({p['leader_dc']}) "
                f"replicas {p['replicas']} isr {p['isr']} dcs {p['isr_dcs']}"
            )
    if status["error"]:
        lines.append(f"error: {status['error']}")
    return "\n".join(lines)
