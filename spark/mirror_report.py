"""The replicated-stack part of the report (spark/mirrors.py's counts): a table per flow, the
failovers, MM2's lag over time with the fault band and the failover instant, and the one-screen
lines."""

from __future__ import annotations

import html

from dcdrill.spark.figures import html_table, png, shade


def _s(ms) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def _rpo(rpo: dict) -> str:
    return (
        "no RPO (nothing happened to the source)"
        if rpo["records"] is None
        else f"RPO {rpo['records']} records / {rpo['seconds']:.1f} s"
    )


def _mm2(events: dict | None) -> str:
    return "-" if events is None else f"{events['restarts']} / {events['rebalances']}"


def prediction_text(p: dict) -> str:
    """One line: a flow's predicted outcome of a fault against the drill's."""
    pr, o = p["predicted"], p["observed"]
    writes = (
        ""
        if "source_writable" not in o
        else f", source writes {'continued' if o['source_writable'] else 'stopped'} (predicted: "
        f"{'continue' if pr['source_writable'] else 'stop'})"
    )
    return (
        f"{p['flow']} under {p['fault']} {p['target']} ({p['prediction']}): acknowledged records missing from "
        f"the target {o['acked_missing']} (predicted {'possible' if pr['acked_loss_possible'] else 'none'})"
        f"{writes}: {'as predicted' if p['as_predicted'] else 'NOT as predicted'}"
    )


def text(summary: dict) -> list[str]:
    out = []
    for name, m in (summary.get("mirrors") or {}).items():
        c, rpo, lag = m["counts"], m["rpo"], m["steady_lag_ms"]
        out.append(
            f"  mirror {name}: mirrored {c['mirrored']} of {c['acked']} acked, not mirrored {c['not_mirrored']}, "
            f"duplicates {c['replication_duplicates']}, order violations {c['target_order_violations']}; "
            f"{_rpo(rpo)}; steady lag p50 {_s(lag['p50'])} "
            f"p99 {_s(lag['p99'])}; caught up {_s(m['catch_up_ms'])} after the heal"
            + (f"; MM2 restarts {m['mm2']['restarts']}, rebalances {m['mm2']['rebalances']}" if m.get("mm2") else "")
        )
    loops = summary.get("mirror_loops") or {}
    if loops:
        out.append("  mirror loops: " + ", ".join(f"{c} {n}" for c, n in loops.items()))
    out += [f"  {prediction_text(p)}" for p in summary.get("mirror_prediction_checks") or []]
    for fo in summary.get("failovers") or []:
        out.append(
            f"  failover {fo['group']} {fo['from']}->{fo['to']}: skipped {fo['failover_skipped']}, "
            f"redelivered {fo['failover_redelivered']}, processed {fo['processed_before']} before and "
            f"{fo['processed_after']} after"
        )
    return out


def plot(summary: dict, t0_ms: float) -> str | None:
    import matplotlib.pyplot as plt

    mirrors = summary.get("mirrors") or {}
    if not any(m["lag_timeline"] for m in mirrors.values()):
        return None
    fig, ax = plt.subplots(figsize=(9, 3))
    for name, m in mirrors.items():
        if not m["lag_timeline"]:
            continue
        # Dense seconds: a second whose records the source never appended is a gap, not a line across it.
        by_sec = {r["sec"]: r for r in m["lag_timeline"]}
        secs = range(m["lag_timeline"][0]["sec"], m["lag_timeline"][-1]["sec"] + 1)
        xs = [(s * 1000 - t0_ms) / 1000 for s in secs]
        for key, style in (("p50", "-"), ("p99", "--")):
            ax.plot(
                xs,
                [max(1, by_sec[s][key]) if s in by_sec else float("nan") for s in secs],
                label=f"{name} lag {key}",
                linestyle=style,
            )
        if m["rpo"]["records"]:
            ax.annotate(
                f"{name} {_rpo(m['rpo'])}",
                ((m["rpo"]["at_ms"] - t0_ms) / 1000, 1),
                xytext=(5, 20),
                textcoords="offset points",
                fontsize=8,
            )
    for fo in summary.get("failovers") or []:
        ax.axvline((fo["at_ms"] - t0_ms) / 1000, color="black", linewidth=1, label=f"failover to {fo['to']}")
    shade(ax, summary, t0_ms)
    (
        ax.set_yscale("log"),
        ax.set_ylim(bottom=1),
        ax.set_ylabel("ms"),
        ax.set_xlabel("seconds since the first send (by source append time)"),
    )
    ax.set_title("MirrorMaker 2 lag: target append time minus source append time"), ax.legend(fontsize=8)
    return png(fig)


def section(summary: dict, t0_ms: float | None) -> str:
    mirrors = summary.get("mirrors")
    if not mirrors:
        return ""
    rows = [
        {
            "flow": name,
            "acked": m["counts"]["acked"],
            "mirrored": m["counts"]["mirrored"],
            "not mirrored": m["counts"]["not_mirrored"],
            "duplicates": m["counts"]["replication_duplicates"],
            "phantoms": m["counts"]["target_phantoms"],
            "order violations": m["counts"]["target_order_violations"],
            "RPO": _rpo(m["rpo"]),
            "steady lag p50 / p99": f"{_s(m['steady_lag_ms']['p50'])} / {_s(m['steady_lag_ms']['p99'])}",
            "lag max": _s(m["lag_ms"]["max"]),
            "caught up after heal": _s(m["catch_up_ms"]),
            "MM2 restarts / rebalances": _mm2(m.get("mm2")),
        }
        for name, m in mirrors.items()
    ]
    fos = [
        {
            "group": f["group"],
            "from -> to": f"{f['from']} -> {f['to']}",
            "skipped": f["failover_skipped"],
            "redelivered": f["failover_redelivered"],
            "processed before": f["processed_before"],
            "processed after": f["processed_after"],
            "unread at the end": f["unread_at_end"],
        }
        for f in summary.get("failovers") or []
    ]
    img = plot(summary, t0_ms) if t0_ms is not None else None
    loops = summary.get("mirror_loops") or {}
    return (
        "<h2>Mirrors (MirrorMaker 2)</h2>"
        + html_table(rows, list(rows[0]))
        + (
            f"<p>Records back in their own cluster (mirror loops): "
            f"{html.escape(', '.join(f'{c} {n}' for c, n in loops.items()))}</p>"
            if loops
            else ""
        )
        + ("<h3>Consumer failover</h3>" + html_table(fos, list(fos[0])) if fos else "")
        + (
            "<h3>Mirrors: prediction vs observation</h3><ul>"
            + "".join(
                f"<li>{'✔' if p['as_predicted'] else '✘'} {html.escape(prediction_text(p))}</li>"
                for p in summary.get("mirror_prediction_checks") or []
            )
            + "</ul>"
            if summary.get("mirror_prediction_checks")
            else ""
        )
        + (f'<figure><img src="{img}" alt="mirror lag"></figure>' if img else "")
        + "<p>RPO: acknowledged records the target did not hold at the failover (else at the source's loss), "
        "and the window of acknowledgements they span, up to the source's last one. MM2 restarts and "
        "rebalances: from the first fault on, read from its log. Definitions: RECORD.md, "
        "Mirrors.</p>"
    )
