"""report/index.html, self-contained: plots embedded as PNG (junit.xml: spark/junit.py)."""

from __future__ import annotations

import html
from datetime import UTC, datetime

from dcdrill.record.contents import SATURATED_IDLE_PCT
from dcdrill.spark import mirror_report
from dcdrill.spark.figures import STYLE, html_table, png, shade


def warm_up() -> None:
    """Import matplotlib ahead of time (a second of CPU the verifier can spend while it waits)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def plots(summary: dict) -> dict[str, str]:
    warm_up()
    import matplotlib.pyplot as plt

    tl = summary["timeline"]
    if not tl["send"]:
        return {}
    t0 = tl["send"][0]["sec"] * 1000
    out = {}
    # Dense seconds: a second without any ack is a zero, not a gap to draw a line across.
    first = tl["send"][0]["sec"]
    last = max([r["sec"] for r in tl["send"]] + [r["sec"] for r in tl["acks"]])
    secs = list(range(first, last + 1))
    acks = {r["sec"]: r["acked"] for r in tl["acks"]}
    sends = {r["sec"]: r for r in tl["send"]}
    xs_all = [s - first for s in secs]

    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot(xs_all, [acks.get(s, 0) for s in secs], label="acks/s")
    ax.plot(
        xs_all,
        [(sends[s]["failed"] + sends[s]["indeterminate"]) if s in sends else 0 for s in secs],
        label="failed + indeterminate (by send second)",
        color="tab:orange",
    )
    shade(ax, summary, t0)
    ax.set_xlabel("seconds since the first send"), ax.set_ylabel("records"), ax.legend(loc="upper right", fontsize=8)
    ax.set_title("Acknowledgements per second")
    out["acks"] = png(fig)

    fig, ax = plt.subplots(figsize=(9, 3))
    nan = float("nan")  # no acknowledged record sent that second: a break in the line
    ax.plot(
        xs_all,
        [sends[s]["latency_p50_ms"] if s in sends and sends[s]["latency_p50_ms"] is not None else nan for s in secs],
        label="p50",
    )
    ax.plot(
        xs_all,
        [sends[s]["latency_p99_ms"] if s in sends and sends[s]["latency_p99_ms"] is not None else nan for s in secs],
        label="p99",
    )
    shade(ax, summary, t0)
    # symlog, not log: a 0 ms latency is drawn; its autoscale's margin would reach below 0 ms
    ax.set_yscale("symlog"), ax.set_ylim(bottom=0), ax.set_xlabel("seconds since the first send"), ax.set_ylabel("ms")
    ax.set_title("Produce latency (acknowledged records, by send second)"), ax.legend(fontsize=8)
    out["latency"] = png(fig)

    # Stairs, not bars: one patch per series however long the drill (a bar per second costs
    # seconds of rendering on a long record).
    fig, ax = plt.subplots(figsize=(9, 3))
    edges = xs_all + [xs_all[-1] + 1]
    lost = [sends[s]["acked_lost"] if s in sends else 0 for s in secs]
    lost_dups = [n + (sends[s]["duplicates_in_log"] if s in sends else 0) for n, s in zip(lost, secs)]
    ax.stairs(lost, edges, fill=True, label="acked lost", color="tab:red")
    ax.stairs(lost_dups, edges, baseline=lost, fill=True, label="duplicates in log", color="tab:purple")
    shade(ax, summary, t0)
    if not any(lost_dups):  # an empty plot would get matplotlib's default -0.04..0.04 axis
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "none lost, none duplicated", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("send time (s)"), ax.set_ylabel("records"), ax.set_title("Lost and duplicated records by send time")
    ax.legend(fontsize=8)
    out["loss"] = png(fig)
    if summary["faults"]:
        out["dcs"] = _dc_timeline(summary, t0, xs_all[-1] + 1)

    coord = summary.get("coordination_timeline") or []
    if coord:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 3.4), sharex=True, height_ratios=[3, 2])
        xs = [(c["at_ms"] - t0) / 1000 for c in coord]
        nan = float("nan")
        top.step(
            xs,
            [nan if c["live_brokers"] is None else c["live_brokers"] for c in coord],
            where="post",
            label="live brokers (registered, not fenced)",
        )
        if any(c.get("in_sync") is not None for c in coord):  # records from before the watch sampled it have none
            top.step(
                xs,
                [nan if c.get("in_sync") is None else c["in_sync"] for c in coord],
                where="post",
                label="drill topic's partitions with every replica in sync",
                color="tab:orange",
            )
        top.set_ylim(bottom=0), top.set_ylabel("count"), top.legend(loc="lower left", fontsize=8)
        top.set_title(
            f"Coordination ({summary['topology'].get('coordination', '')}): live brokers, full ISRs "
            "and the quorum's leader"
        )
        dcs = sorted({c["leader_dc"] for c in coord} - {"none"}) + ["none"]
        bottom.scatter(
            xs,
            [dcs.index(c["leader_dc"]) for c in coord],
            s=6,
            c=["tab:red" if c["leader_dc"] == "none" else "tab:blue" for c in coord],
        )
        bottom.set_yticks(range(len(dcs)), dcs, fontsize=8), bottom.set_ylabel("leader in")
        bottom.set_ylim(-0.5, len(dcs) - 0.5)
        for ax in (top, bottom):
            shade(ax, summary, t0)
        bottom.set_xlabel("seconds since the first send")
        out["coordination"] = png(fig)

    parts = summary["by_partition"]
    if parts:
        fig, ax = plt.subplots(figsize=(9, 2.8))
        topics = {p["topic"] for p in parts}
        # One topic (the usual drill): the partition numbers alone, the topic named once below.
        labels = [str(p["partition"]) if len(topics) == 1 else f"{p['topic']}-{p['partition']}" for p in parts]
        ax.bar(labels, [p["max_ack_gap_ms"] for p in parts])
        ax.set_ylabel("ms"), ax.set_title("Max gap between consecutive acks, per partition (unavailability)")
        if len(topics) == 1:
            ax.set_xlabel(f"partition of {next(iter(topics))}")
        else:
            ax.tick_params(axis="x", rotation=45)
        out["gaps"] = png(fig)
    return out


def _dc_timeline(summary: dict, t0: float, width_s: float) -> str:
    """One row per DC: the faults that hit it (start to heal) and when every partition acked again."""
    import matplotlib.pyplot as plt

    hit = [f["target"].replace("<->", " ").split() for f in summary["faults"]]  # a link fault hits both ends
    dcs = [d["name"] for d in summary["topology"].get("datacenters", [])]
    dcs += [t for targets in hit for t in targets if t not in dcs]
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * max(len(dcs), 1)))
    for f, targets in zip(summary["faults"], hit):
        start = (f["start_ms"] - t0) / 1000
        end = ((f.get("end_ms") or t0 + width_s * 1000) - t0) / 1000
        for i, dc in enumerate(dcs):
            if dc in targets:
                ax.broken_barh([(start, end - start)], (i - 0.35, 0.7), color="tab:red", alpha=0.6)
                ax.text(start, i, f" {f['fault']}", va="center", fontsize=8)
                ax.plot([end], [i], marker="|", markersize=14, color="black")
        if f.get("recovery_ms") is not None:
            ax.axvline(start + f["recovery_ms"] / 1000, color="tab:green", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(dcs)), dcs), ax.set_ylim(-0.6, len(dcs) - 0.4), ax.set_xlim(0, width_s)
    ax.set_xlabel("seconds since the first send (red: fault, |: heal, dashed green: every partition acking again)")
    ax.set_title("Datacenters")
    return png(fig)


# The record's own files the report links to, with what each is (written by `dcdrill drill`).
RECORD_LINKS = {
    "journal.json": "Chaos Toolkit's journal",
    "chaos.log": "Chaos Toolkit's log",
    "experiment.json": "the composed experiment",
}


def datacenter_text(dc: dict, topo: dict) -> str:
    """ "dc-a (2 brokers, 1 ZK)", or with KRaft controllers where the cluster has no ZooKeeper."""

    def n(count, word):
        return f"{count} {word}{'' if count == 1 else 's'}"

    if topo.get("coordination") == "kraft" or (not dc.get("zookeepers") and dc.get("controllers")):
        return f"{dc['name']} ({n(dc['brokers'], 'broker')}, {n(dc.get('controllers', 0), 'KRaft controller')})"
    return f"{dc['name']} ({n(dc['brokers'], 'broker')}, {dc.get('zookeepers', 0)} ZK)"


def _record_links(present: set[str] | None) -> str:
    """Links to the record's files that are there (all of them when unknown), and the report's own."""
    names = [n for n in RECORD_LINKS if present is None or n in present]
    theirs = ", ".join(f'<a href="../{n}">{n}</a> ({RECORD_LINKS[n]})' for n in names)
    return (
        f"<p>The drill record: {theirs + ', ' if theirs else ''}"
        '<a href="summary.json">summary.json</a>, <a href="junit.xml">junit.xml</a>.</p>'
    )


def _predicted_dcs(pred: dict) -> str:
    if not pred:
        return "<p>This record holds no predictions (its topology.json has none), so nothing is compared with them.</p>"
    return (
        "<p>What the topology model predicted for losing each DC: "
        + html.escape(
            "; ".join(
                f"{dc}: quorum {'survives' if p['quorum_survives'] else 'lost'}, {_predicted(p)}"
                for dc, p in pred.items()
            )
        )
        + "</p>"
    )


def render_html(summary: dict, imgs: dict[str, str] | None = None, present: set[str] | None = None) -> str:
    """The report page; `imgs`: plots(summary), when drawn already."""
    imgs = plots(summary) if imgs is None else imgs
    topo = summary["topology"]
    verdict = summary["verdict"]
    color = "#1a7f37" if verdict == "pass" else "#cf222e"
    rules = "".join(
        f"<tr><td>{'✔' if r['passed'] else '✘'}</td><td>{html.escape(r['rule'])}</td>"
        f"<td>{html.escape(r['description'])}</td><td>{html.escape(r['message'])}</td></tr>"
        for r in summary["rules"]
    )
    counts = html_table([{"count": k, "value": v} for k, v in summary["counts"].items()], ["count", "value"])
    cols = [
        "produced",
        "acked",
        "failed",
        "indeterminate",
        "acked_lost",
        "acked_unseen",
        "failed_present",
        "indeterminate_present",
        "duplicates_in_log",
        "duplicates_delivered",
        "latency_p50_ms",
        "latency_p99_ms",
    ]
    faults = html_table(
        [_fault_row(f, topo.get("predictions") or {}, summary.get("baseline")) for f in summary["faults"]],
        ["fault", "target", "started (UTC)", "lasted", "recovery", "writes continued", "partitions acking after start"],
    )
    pred = topo.get("predictions", {})
    fig = "".join(f'<figure><img src="{src}" alt="{name}"></figure>' for name, src in imgs.items())
    run = html.escape(summary["run"])
    dcs = html.escape(", ".join(datacenter_text(d, topo) for d in topo.get("datacenters", [])))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>dcdrill report {run}</title>
<style>{STYLE}.verdict{{font-size:1.6em;color:{color};font-weight:bold}}</style></head><body>
<h1>dcdrill drill report</h1>
<p class="verdict">Verdict: {verdict.upper()}</p>
<p>Run <code>{run}</code>: stack <b>{html.escape(str(topo.get("stack") or "not recorded"))}</b>
on the {html.escape(str(topo.get("backend") or "unrecorded"))} backend, experiment
<b>{html.escape(str(summary.get("experiment") or "not recorded"))}</b>.
Cluster <b>{html.escape(str(topo.get("cluster")))}</b>,
profile <b>{html.escape(str(topo.get("profile")))}</b>: replication factor {topo.get("replication_factor")},
min.insync.replicas {topo.get("min_insync_replicas")},
unclean election {"on" if topo.get("unclean_leader_election") else "off"},
acks={topo.get("acks")}. Datacenters: {dcs}.</p>
{_record_links(present)}
{_predicted_dcs(pred)}
<h2>Rules</h2><table><tr><th></th><th>rule</th><th>promise</th><th>measured</th></tr>{rules}</table>
<h2>Faults</h2>{faults}
{_coordination(summary)}
{mirror_report.section(summary, summary["timeline"]["send"][0]["sec"] * 1000 if summary["timeline"]["send"] else None)}
{_predictions(summary)}
{_latency(summary)}
<p>Data-loss window (send times of the lost acknowledged records): {html.escape(_loss_window(summary))}</p>
{_examples(summary)}
{_transactions(summary)}
{fig}
<h2>By phase</h2>{html_table(summary["phases"], ["phase"] + cols)}
{_by_dc(summary, cols)}
{_by_partition(summary["by_partition"], cols)}
<h2>Counts</h2>{counts}
<p>Definitions: RECORD.md in the dcdrill repository. {html.escape(_engine(summary))}</p></body></html>"""


def _transactions(summary: dict) -> str:
    """A record with transactions (spark/transactions.py): each outcome, each anomaly's count, and
    the transactions it names."""
    tx = summary.get("transactions")
    if not tx:
        return ""
    outcomes = ", ".join(f"{n} {o}" for o, n in tx["outcomes"].items())
    counts = html_table([tx["counts"]], list(tx["counts"]))
    named = html_table(tx["examples"], ["kind", "producer", "txn", "outcome", "records", "in_log", "reads"])
    return (
        f"<h2>Transactions</h2><p>{tx['transactions']} transactions: {html.escape(outcomes)}. Read committed, each "
        "must be all or nothing in the log, and no consumer may be given an aborted one's records.</p>"
        + counts
        + (named if tx["examples"] else "")
    )


def _by_dc(summary: dict, cols: list[str]) -> str:
    """Each producer DC's counts, split by phase when the drill had a fault (whether the surviving
    DC's producers kept writing is the question a DC loss asks)."""
    rows = summary.get("by_dc_phase")
    if rows and len(summary["phases"]) > 1:
        return "<h2>By producer DC and phase</h2>" + html_table(rows, ["dc", "phase"] + cols)
    return "<h2>By producer DC</h2>" + html_table(summary["by_dc"], ["dc"] + cols)


def _by_partition(rows: list[dict], cols: list[str]) -> str:
    """The partitions' table; a drill's one topic is named in the heading, not in every row."""
    cols = cols + ["max_ack_gap_ms", "reordered", "divergent_offsets"]
    topics = sorted({r.get("topic") for r in rows})
    if len(topics) == 1:
        return f"<h2>By partition of {html.escape(str(topics[0]))}</h2>" + html_table(rows, ["partition"] + cols)
    return "<h2>By partition</h2>" + html_table(rows, ["topic", "partition"] + cols)


EXAMPLE_COLUMNS = [
    "record",
    "producer",
    "seq",
    "topic",
    "partition",
    "acknowledged offset",
    "in the log at",
    "sent (UTC)",
]
EXAMPLE_KINDS = {
    "lost": "acknowledged, lost",
    "duplicated_in_log": "in the log twice or more",
    "duplicated_delivered": "delivered twice or more",
}


def _examples(summary: dict) -> str:
    """The first lost or duplicated records (at most 100, earliest send first): what to look for
    in the brokers' logs and the producers' ledgers."""
    examples = summary.get("examples") or []
    if not examples:
        return ""
    rows = [
        {
            "record": EXAMPLE_KINDS.get(e["kind"], e["kind"]),
            "producer": e["producer"],
            "seq": e["seq"],
            "topic": e["topic"],
            "partition": e["partition"],
            "acknowledged offset": "" if e["acked_offset"] is None else e["acked_offset"],
            "in the log at": ", ".join(e["log_offsets"]) or "nowhere",
            "sent (UTC)": _utc(e["send_ms"]) if e["send_ms"] is not None else "",
        }
        for e in examples
    ]
    c = summary["counts"]
    return (
        f"<h2>Lost or duplicated records</h2><p>The first {len(rows)} by send time; in all, "
        f"{c.get('acked_lost', 0)} acknowledged records lost, {c.get('duplicates_in_log', 0)} extra copies in "
        f"the log, {c.get('duplicates_delivered', 0)} extra deliveries. The log's copies as partition:offset.</p>"
        + html_table(rows, EXAMPLE_COLUMNS)
    )


# A baseline this many times the network's predicted part is queueing, not the network (README:
# "Produce latency ... predicted beside measured").
QUEUED_OVER_NETWORK = 2


def _latency(summary: dict) -> str:
    """The produce latency the model predicts at the stack's links, beside what each phase measured."""
    topo, baseline = summary["topology"], summary.get("baseline") or {}
    acks = "1" if topo.get("acks") in ("0", "1") else "all"
    predicted = (topo.get("produce_latency") or {}).get("range_ms", {}).get(acks)
    parts = []
    if predicted and not any(predicted):
        parts.append(
            "the stack adds no delay at its links (one DC, or none set): the latency is the brokers' "
            "and the machine's own"
        )
    elif predicted:
        farthest = ", plus one or two from it to its farthest replica" if acks == "all" else ""
        parts.append(
            f"the network adds {predicted[0]:g} to {predicted[1]:g} ms at the stack's own links "
            f"(acks={acks}: a round trip to the leader{farthest}; "
            "producers write to leaders in every DC)"
        )
    if baseline.get("p50_ms") is not None:
        parts.append(
            f"baseline before the fault p50 {baseline['p50_ms']} ms, p99 {baseline['p99_ms']} ms"
            + (
                ""
                if baseline.get("settled")
                else f" (not settled after {baseline.get('waited_s')} s"
                + (f": {baseline['cause']})" if baseline.get("cause") else ")")
            )
            + (f", {note}" if (note := machine_note(baseline)) else "")
        )
        if acks == "all" and predicted and predicted[1] > 0 and baseline["p50_ms"] > QUEUED_OVER_NETWORK * predicted[1]:
            parts.append(
                "over twice the network's part: a broker serves one request per connection at a time, "
                "so a producer's pipelined acks=all requests wait a replication round each (fewer, "
                "larger requests shorten the queue: linger.ms near the round trip, or max.in.flight 1)"
            )
    parts += [
        f"{p['phase']}: p50 {p['latency_p50_ms']} ms, p99 {p['latency_p99_ms']} ms"
        for p in summary["phases"]
        if p.get("latency_p50_ms") is not None
    ]
    return f"<h2>Produce latency</h2><p>{html.escape('; '.join(parts) or 'no acknowledged record')}</p>"


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def machine_note(baseline: dict | None) -> str:
    """What every recovery time is shown with: the machine's idle share just before the fault."""
    idle = (baseline or {}).get("machine_idle_pct")
    if idle is None:
        return ""
    return f"machine {idle:g} % idle before the fault" + (": saturated" if idle < SATURATED_IDLE_PCT else "")


def _fault_row(f: dict, predictions: dict, baseline: dict | None = None) -> dict:
    """summary.json keeps epoch milliseconds; a reader wants a clock time and seconds. Whether writes
    continued is said beside what the topology predicted for losing that DC, where it predicted."""
    end, recovery = f.get("end_ms"), f.get("recovery_ms")
    writes = "yes" if f.get("writes_continued") else "no: not every partition before the heal"
    if (p := predictions.get(f["target"])) is not None:
        writes += (
            " (as predicted)"
            if bool(p["writable"]) == bool(f.get("writes_continued"))
            else f" (NOT as predicted: writes {'continue' if p['writable'] else 'stop'})"
        )
    return {
        "fault": f["fault"],
        "target": f["target"],
        "started (UTC)": _utc(f["start_ms"])
        + (
            ""
            if (asked := f.get("requested_ms")) is None
            else f" ({(f['start_ms'] - asked) / 1000:.1f} s after the request)"
        ),
        "lasted": "not healed" if end is None else f"{(end - f['start_ms']) / 1000:.1f} s",
        "recovery": "not every partition"
        if recovery is None
        else f"{recovery / 1000:.1f} s" + (f" ({note})" if (note := machine_note(baseline)) else ""),
        "writes continued": writes,
        "partitions acking after start": f"{f['partitions_acking_after_start']} of {f['partitions']}",
    }


def coordination_text(f: dict) -> str:
    """One line: how the coordination moved during a DC loss (spark/coordination.py)."""
    c = f["coordination"]
    sec = lambda ms: f"{ms / 1000:.1f} s"  # noqa: E731
    if c["leader_change_ms"] is not None:
        leader = (
            f"leader {c['leader_before'] or 'none'} -> {c['leader_after']} ({c['leader_after_dc']}) "
            f"after {sec(c['leader_change_ms'])}"
        )
    elif c["leader_had_to_move"]:
        leader = f"leader {c['leader_before'] or 'none'} lost and no new one before the heal"
    else:
        leader = f"leader {c['leader_before']} ({c['leader_before_dc']}) kept"
    parts = [leader]
    if c.get("quorum_lost_ms"):
        unanswered = c.get("quorum_unanswered_ms") or 0
        parts.append(
            f"no quorum (no leader, or one without a majority) for {sec(c['quorum_lost_ms'])}"
            + (
                f", {sec(unanswered)} of it only DescribeQuorum unanswered while the brokers answered"
                if unanswered
                else ""
            )
        )
    if c["fenced_ms"]:
        slow = c["fencing_ms"]
        parts.append(
            f"{len(c['fenced_ms'])} broker(s) of {f['target']} out of the live brokers after "
            + (sec(slow) if slow is not None else "more than the fault lasted (some never)")
        )
    if c.get("controller_change_ms") is not None:
        parts.append(f"Kafka controller moved after {sec(c['controller_change_ms'])}")
    if c.get("isr_shrunk_ms") is not None:
        parts.append(f"the drill topic's first ISR shrank after {sec(c['isr_shrunk_ms'])}")
    if c.get("isr_full_after_heal_ms") is not None:
        parts.append(f"every ISR full again {sec(c['isr_full_after_heal_ms'])} after the heal")
    return "; ".join(parts) + f" (sampled every {(c['resolution_ms'] or 0) / 1000:.1f} s)"


def _coordination(summary: dict) -> str:
    rows = [(f, f["coordination"]) for f in summary["faults"] if f.get("coordination")]
    if not rows:
        return ""
    kind = (summary.get("topology") or {}).get("coordination", "")
    body = "".join(
        f"<tr><td>{html.escape(f['fault'])}</td><td>{html.escape(f['target'])}</td>"
        f"<td style='text-align:left'>{html.escape(coordination_text(f))}</td></tr>"
        for f, _ in rows
    )
    return (
        f"<h2>Coordination ({html.escape(kind)})</h2><p>The quorum's leader (the ZooKeeper ensemble's or the "
        "active KRaft controller) and the brokers the cluster counted as live, sampled through the drill "
        "(coordination.jsonl). A lost DC's brokers leave the live brokers when their ZooKeeper session expires, "
        "or when the KRaft controller fences them.</p>"
        f"<table><tr><th>fault</th><th>DC</th><th></th></tr>{body}</table>"
    )


def _loss_window(summary: dict) -> str:
    w = summary.get("data_loss_window")
    if not w:
        return "no acknowledged record lost"
    text = f"{w['span_ms'] / 1000:.3f} s wide, from {_utc(w['first_lost_send_ms'])} to {_utc(w['last_lost_send_ms'])}"
    if w.get("first_relative_to_fault_ms") is not None:
        text += (
            f", {w['first_relative_to_fault_ms'] / 1000:+.3f} s to {w['last_relative_to_fault_ms'] / 1000:+.3f} s "
            "from the first fault's start"
        )
    return text


def _observed_writes(o: dict, baseline: dict | None = None) -> str:
    if o["recovery_ms"] is None:
        return "stopped: some partition acknowledged nothing after the fault started"
    note = machine_note(baseline)
    again = f"every partition acknowledged again {o['recovery_ms'] / 1000:.1f} s after the start" + (
        f", {note}" if note else ""
    )
    return (
        f"continued ({again})"
        if o["writable"]
        else f"stopped until the heal ({again}; the fault was held {o['held_ms'] / 1000:.1f} s)"
    )


def _predicted(p: dict) -> str:
    return (
        f"writes {'continue' if p['writable'] else 'stop'}, "
        f"acked loss {'possible' if p['acked_loss_possible'] else 'impossible'}"
        + (f" ({p['why']})" if p.get("why") else "")
    )


def prediction_text(p: dict, baseline: dict | None = None) -> str:
    """One line: the topology model's prediction for losing a DC against what the drill saw;
    `baseline` (the summary's): the machine's idle share beside the recovery time."""
    o = p["observed"]
    return (
        f"predicted {_predicted(p['predicted'])}; observed writes {_observed_writes(o, baseline)}, "
        f"{'acknowledged records lost' if o['acked_loss'] else 'no acknowledged record lost'}: "
        f"{'as predicted' if p['as_predicted'] else 'NOT as predicted'}"
        + (f" ({p['caveat']})" if p.get("caveat") else "")
    )


def _predictions(summary: dict) -> str:
    checks = summary.get("prediction_checks") or []
    if not checks:
        return ""
    rows = "".join(
        f"<tr><td>{'✔' if p['as_predicted'] else '✘'}</td><td>{html.escape(p['fault'])}</td>"
        f"<td>{html.escape(p['target'])}</td><td style='text-align:left'>"
        f"{html.escape(prediction_text(p, summary.get('baseline')))}</td></tr>"
        for p in checks
    )
    return (
        "<h2>Prediction vs observation</h2><p>What the topology model (<code>dcdrill plan</code>) said losing "
        "the DC would do, against what this drill saw. Not a verdict rule: it says whether the model of the "
        f"cluster was right.</p><table><tr><th></th><th>fault</th><th>DC</th><th></th></tr>{rows}</table>"
    )


def _engine(summary: dict) -> str:
    sp = summary.get("spark")
    if not sp:
        return ""
    return (
        f"Verified by Spark {sp['version']} ({sp['master']}, {sp['shuffle_partitions']} shuffle partitions) "
        f"in {summary.get('verify_seconds')} s."
    )
