"""Repeated drills of one setup, side by side: what a single drill cannot show.

One drill says what happened once; a setting earns trust when the same fault, injected again
and again, gives the same answer. `dcdrill history runs/` reads the summary.json of every
verified drill record (nothing is recomputed: `dcdrill verify` wrote them), groups the drills by
what the topology promised (profile, replication factor, min.insync.replicas, unclean election,
acks) and by the faults injected, and gives for each group: how many drills passed, how many
lost acknowledged records and the widest data-loss window, the recovery time and the longest
acknowledgement gap as min / median / max, and how often the topology model's prediction held.
"""

from __future__ import annotations

import html
import json
import statistics
from pathlib import Path

from dcdrill.record.contents import SATURATED_IDLE_PCT

SETUP = ("coordination", "profile", "replication_factor", "min_insync_replicas", "unclean_leader_election", "acks")


class BadHistory(ValueError):
    """Exit 2: nothing to summarise, or a summary that cannot be read."""


def load(paths: list[str]) -> list[dict]:
    """The summary.json of each drill record: `paths` are drill records or folders holding them
    at any depth (runs/, a `dcdrill drill --repeat` series). Records without a report (not
    verified yet) are left out. A drill is named by its path below the folder given."""
    found = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise BadHistory(f"{path}: no such directory")
        files = (
            [path / "report" / "summary.json"]
            if (path / "report").is_dir()
            else sorted(path.rglob("report/summary.json"))
        )
        for f in files:
            try:
                summary = json.loads(f.read_text())
                summary["counts"]["acked_lost"]  # the least a summary must hold to be compared
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise BadHistory(f"{f}: not a verifier summary ({exc!r})") from None
            record = f.parent.parent
            summary["run"] = record.name if record == path else str(record.relative_to(path))
            found.append(summary)
    if not found:
        raise BadHistory(f"no verified drill record under {', '.join(paths)} (run `dcdrill verify` first)")
    return found


def groups(summaries: list[dict]) -> list[dict]:
    """One entry per (setup, faults), sorted: the drills' figures as counts and spreads."""
    by_key: dict[tuple, list[dict]] = {}
    for s in summaries:
        topology = s.get("topology") or {}
        setup = tuple((k, topology.get(k)) for k in SETUP)
        faults = tuple(f"{f.get('fault')} {f.get('target')}" for f in s.get("faults") or [])
        by_key.setdefault((setup, faults), []).append(s)
    return [
        _group(dict(setup), list(faults), runs)
        for (setup, faults), runs in sorted(by_key.items(), key=lambda kv: json.dumps(kv[0], default=str))
    ]


def _spread(values: list) -> dict | None:
    values = [v for v in values if v is not None]
    return {"min": min(values), "median": statistics.median(values), "max": max(values)} if values else None


def _group(setup: dict, faults: list[str], runs: list[dict]) -> dict:
    lost = [s["counts"]["acked_lost"] for s in runs]
    # A drill that never recovered (some partition acknowledged nothing again within the record)
    # is counted apart, not hidden in the spread.
    faulted = [s for s in runs if s.get("faults")]
    checked = [s["prediction_checks"] for s in runs if s.get("prediction_checks")]
    return {
        "setup": setup,
        "faults": faults,
        "drills": len(runs),
        "runs": sorted(s["run"] for s in runs),
        "passed": sum(s.get("verdict") == "pass" for s in runs),
        "with_acked_loss": sum(n > 0 for n in lost),
        "acked_lost": _spread(lost),
        "widest_loss_window_ms": max(
            (s["data_loss_window"]["span_ms"] for s in runs if s.get("data_loss_window")), default=None
        ),
        "drills_with_faults": len(faulted),
        "recovery_ms": _spread([_recovery(s) for s in faulted]),
        "never_recovered": sum(_recovery(s) is None for s in faulted),
        # Every recovery time goes with the machine's spare share before its fault (the report's
        # rule): on a saturated lab a recovery is CPU queues as much as Kafka.
        "idle_pct": _spread([_idle(s) for s in faulted]),
        "saturated": sum((i := _idle(s)) is not None and i < SATURATED_IDLE_PCT for s in faulted),
        "idle_unknown": sum(_idle(s) is None for s in faulted),
        "max_ack_gap_ms": _spread([s["counts"].get("max_ack_gap_ms") for s in runs]),
        "leader_change_ms": _spread([_coordination(s, "leader_change_ms") for s in faulted]),
        "fencing_ms": _spread([_coordination(s, "fencing_ms") for s in faulted]),
        "predictions_checked": len(checked),
        "as_predicted": sum(all(c["as_predicted"] for c in cl) for cl in checked),
    }


def label(g: dict) -> str:
    s = g["setup"]
    unclean = {True: "unclean on", False: "unclean off"}.get(s["unclean_leader_election"], "unclean ?")
    faults = ", ".join(g["faults"]) or "no fault"
    coordination = f"{s['coordination']}, " if s.get("coordination") else ""
    return (
        f"{coordination}{s['profile']}, RF {s['replication_factor']}, "
        f"min.insync {s['min_insync_replicas']}, {unclean}, "
        f"acks={s['acks']}: {faults}"
    )


def _short(g: dict) -> str:
    s = g["setup"]
    return (
        f"{', '.join(g['faults']) or 'no fault'}\n{s['profile']} RF {s['replication_factor']}/"
        f"{s['min_insync_replicas']}{' unclean' if s['unclean_leader_election'] else ''}"
    )


def _recovery(summary: dict) -> int | None:
    """The slowest fault's recovery; None without faults or when one never recovered."""
    values = [f.get("recovery_ms") for f in summary.get("faults") or []]
    return max(values) if values and None not in values else None


def _idle(summary: dict) -> float | None:
    """The machine's idle share when the baseline was taken, just before the fault (baseline.json)."""
    return (summary.get("baseline") or {}).get("machine_idle_pct")


def _idle_text(g: dict) -> str:
    """The idle share beside a group's recovery times: its spread, and how many drills it saturated."""
    if g["idle_pct"] is None:
        return "machine idle before the fault: not measured"
    spread = "  ".join(f"{k} {g['idle_pct'][k]:g} %" for k in ("min", "median", "max"))
    known = g["drills_with_faults"] - g["idle_unknown"]
    return (
        f"machine idle before the fault: {spread}; saturated (< {SATURATED_IDLE_PCT:g} %) in {g['saturated']}/{known}"
    )


def _coordination(summary: dict, key: str) -> int | None:
    """The slowest of a coordination time (spark/coordination.py) over the drill's faults."""
    values = [f["coordination"][key] for f in summary.get("faults") or [] if f.get("coordination")]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _ms(spread: dict | None) -> str:
    if spread is None:
        return "-"
    return "  ".join(f"{k} {spread[k] / 1000:.1f}s" for k in ("min", "median", "max"))


def render_text(gs: list[dict]) -> str:
    lines = []
    for g in gs:
        n = g["drills"]
        window = g["widest_loss_window_ms"]
        lines += [
            f"{label(g)}  ({n} drill{'s' if n != 1 else ''})",
            f"  verdict pass {g['passed']}/{n}; acknowledged loss in {g['with_acked_loss']}/{n}"
            + (
                f" (at most {g['acked_lost']['max']} records, widest window {window / 1000:.1f}s)"
                if g["with_acked_loss"]
                else ""
            ),
            f"  recovery        {_ms(g['recovery_ms'])}"
            + (f"  ({g['never_recovered']} never recovered)" if g["never_recovered"] else ""),
            *([f"                  ({_idle_text(g)})"] if g["drills_with_faults"] else []),
            f"  max ack gap     {_ms(g['max_ack_gap_ms'])}",
        ]
        if g["leader_change_ms"]:
            lines.append(f"  leader change   {_ms(g['leader_change_ms'])}")
        if g["fencing_ms"]:
            lines.append(f"  brokers fenced  {_ms(g['fencing_ms'])}")
        if g["predictions_checked"]:
            lines.append(f"  prediction held {g['as_predicted']}/{g['predictions_checked']}")
    return "\n".join(lines)


def render_html(gs: list[dict], summaries: list[dict]) -> str:
    """Self-contained page: the groups as a table and each drill as a dot (recovery, ack gap)."""
    from dcdrill.spark import figures, report

    report.warm_up()  # the Agg backend: no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.7 * len(gs) + 1.8), sharey=True)
    for ax, (title, pick) in zip(
        axes,
        (
            ("recovery (s): fault start to every partition acknowledging again", _recovery),
            ("longest acknowledgement gap (s)", lambda s: s["counts"].get("max_ack_gap_ms")),
        ),
    ):
        right = 0.0
        for y, g in enumerate(gs):
            xs = [v / 1000 for s in summaries if s["run"] in g["runs"] and (v := pick(s)) is not None]
            ax.scatter(xs, [y] * len(xs), alpha=0.6)
            right = max([right] + xs)
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, right * 1.08 or 1)  # past the slowest drill, so that its dot is drawn whole
    axes[0].set_yticks(range(len(gs)), [_short(g) for g in gs], fontsize=8)
    fig.tight_layout()
    rows = [
        {
            "setup and faults": label(g),
            "drills": g["drills"],
            "passed": g["passed"],
            "with acked loss": g["with_acked_loss"],
            "recovery (s) min / median / max": _ms(g["recovery_ms"]),
            "machine before the fault": _idle_text(g) if g["drills_with_faults"] else "-",
            "never recovered": g["never_recovered"],
            "max ack gap": _ms(g["max_ack_gap_ms"]),
            "leader change": _ms(g["leader_change_ms"]),
            "brokers fenced": _ms(g["fencing_ms"]),
            "prediction held": f"{g['as_predicted']}/{g['predictions_checked']}" if g["predictions_checked"] else "-",
        }
        for g in gs
    ]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>dcdrill history</title>"
        f"<style>{figures.STYLE}</style></head><body>"
        f"<h1>dcdrill history: {len(summaries)} drills</h1>{figures.html_table(rows, list(rows[0]))}"
        f"<img alt='each drill as a dot' src='{figures.png(fig)}'>"
        f"<p>Runs: {html.escape(', '.join(sorted(s['run'] for s in summaries)))}</p></body></html>"
    )
