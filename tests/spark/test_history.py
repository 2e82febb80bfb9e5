"""`dcdrill history`: repeated drills grouped by promise and fault, from their summaries."""

import base64
import json
import re

from dcdrill import cli
from dcdrill.spark import history

CONSISTENCY = {
    "profile": "consistency-first",
    "replication_factor": 4,
    "min_insync_replicas": 3,
    "unclean_leader_election": False,
    "acks": "all",
}
AVAILABILITY = {
    "profile": "availability-first",
    "replication_factor": 4,
    "min_insync_replicas": 2,
    "unclean_leader_election": True,
    "acks": "1",
}


def drill(
    runs, name, setup, recovery_ms=None, lost=0, window_ms=None, gap_ms=1000, predicted=None, fault="kill-dc", idle=None
):
    """A drill record with the report `dcdrill verify` writes (the fields history reads)."""
    faults = (
        [{"fault": fault, "target": "dc-a", "start_ms": 1_000_000, "end_ms": 1_035_000, "recovery_ms": recovery_ms}]
        if fault
        else []
    )
    summary = {
        "run": name,
        "topology": {**setup, "cluster": "main", "datacenters": []},
        "faults": faults,
        "verdict": "fail" if lost and setup is CONSISTENCY else "pass",
        "counts": {"acked_lost": lost, "max_ack_gap_ms": gap_ms},
        "data_loss_window": {"span_ms": window_ms} if window_ms is not None else None,
    }
    if idle is not None:  # the latency-settled probe's baseline; older summaries have none
        summary["baseline"] = {"machine_idle_pct": idle}
    if predicted is not None:  # summaries from before prediction checks have none
        summary["prediction_checks"] = [{"fault": fault, "target": "dc-a", "as_predicted": predicted}]
    (runs / name / "report").mkdir(parents=True)
    (runs / name / "report" / "summary.json").write_text(json.dumps(summary))


def fleet(tmp_path):
    runs = tmp_path / "runs"
    # Two of them a series (`dcdrill drill --repeat 2`), one folder deeper.
    drill(runs, "series-x2/drill-1", CONSISTENCY, recovery_ms=40_000, gap_ms=39_000, predicted=True, idle=3.5)
    drill(runs, "series-x2/drill-2", CONSISTENCY, recovery_ms=44_000, gap_ms=43_000, predicted=True, idle=41.0)
    drill(runs, "c3", CONSISTENCY, recovery_ms=None, gap_ms=60_000, predicted=False, idle=0.0)  # never acked again
    drill(runs, "c4", CONSISTENCY, recovery_ms=41_000, gap_ms=40_000)  # an older summary
    drill(runs, "a1", AVAILABILITY, recovery_ms=3_000, lost=12, window_ms=800, gap_ms=2_500, predicted=True)
    drill(runs, "a2", AVAILABILITY, recovery_ms=5_000, lost=0, gap_ms=4_000, predicted=True)
    drill(runs, "a3", AVAILABILITY, recovery_ms=4_000, lost=30, window_ms=1_900, gap_ms=3_000, predicted=True)
    drill(runs, "quiet", CONSISTENCY, fault=None, gap_ms=300)
    (runs / "unverified").mkdir()  # a record not verified yet: no report, left out
    return runs


def test_drills_are_grouped_by_promise_and_fault_with_exact_spreads(tmp_path):
    groups = {(g["setup"]["profile"], tuple(g["faults"])): g for g in history.groups(history.load([fleet(tmp_path)]))}
    assert set(groups) == {
        ("availability-first", ("kill-dc dc-a",)),
        ("consistency-first", ("kill-dc dc-a",)),
        ("consistency-first", ()),
    }
    c = groups[("consistency-first", ("kill-dc dc-a",))]
    assert (c["drills"], c["passed"], c["with_acked_loss"]) == (4, 4, 0)
    assert c["runs"] == ["c3", "c4", "series-x2/drill-1", "series-x2/drill-2"]
    assert c["recovery_ms"] == {"min": 40_000, "median": 41_000, "max": 44_000} and c["never_recovered"] == 1
    assert c["max_ack_gap_ms"] == {"min": 39_000, "median": 41_500, "max": 60_000}
    assert (c["as_predicted"], c["predictions_checked"], c["widest_loss_window_ms"]) == (2, 3, None)
    # Each recovery time beside the machine's idle share before its fault (c4 predates it).
    assert c["idle_pct"] == {"min": 0.0, "median": 3.5, "max": 41.0} and (c["saturated"], c["idle_unknown"]) == (2, 1)
    a = groups[("availability-first", ("kill-dc dc-a",))]
    assert (a["drills"], a["passed"], a["with_acked_loss"]) == (3, 3, 2)
    assert a["acked_lost"] == {"min": 0, "median": 12, "max": 30} and a["widest_loss_window_ms"] == 1_900
    assert a["recovery_ms"] == {"min": 3_000, "median": 4_000, "max": 5_000} and a["never_recovered"] == 0
    quiet = groups[("consistency-first", ())]
    assert (quiet["drills"], quiet["recovery_ms"], quiet["never_recovered"]) == (1, None, 0)


def test_command_prints_text_or_json_and_writes_a_page_with_a_plot(tmp_path, capsys):
    runs, page = fleet(tmp_path), tmp_path / "history.html"
    assert cli.main(["history", str(runs), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    assert "availability-first, RF 4, min.insync 2, unclean on, acks=1: kill-dc dc-a  (3 drills)" in text
    assert "acknowledged loss in 2/3 (at most 30 records, widest window 1.9s)" in text
    assert "recovery        min 40.0s  median 41.0s  max 44.0s  (1 never recovered)" in text
    assert (
        "(machine idle before the fault: min 0 %  median 3.5 %  max 41 %; saturated (< 20 %) in 2/3)"
        in text.split("kill-dc dc-a  (4 drills)")[1]
    )
    assert "machine idle before the fault: not measured" in text  # the availability-first drills have none
    assert "saturated (&lt; 20 %) in 2/3" in page.read_text()
    assert "prediction held 2/3" in text
    png = base64.b64decode(re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page.read_text()).group(1))
    assert png.startswith(b"\x89PNG") and len(png) > 5_000
    assert cli.main(["history", str(runs / "a1"), "--json"]) == 0  # one drill record works too
    (one,) = json.loads(capsys.readouterr().out)
    assert one["runs"] == ["a1"] and one["acked_lost"] == {"min": 12, "median": 12, "max": 12}


def test_nothing_to_summarise_or_an_unreadable_summary_exits_2_naming_it(tmp_path, capsys):
    assert cli.main(["history", str(tmp_path)]) == 2
    assert "no verified drill record under" in capsys.readouterr().err
    assert cli.main(["history", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such directory" in capsys.readouterr().err
    bad = tmp_path / "runs" / "x" / "report"
    bad.mkdir(parents=True)
    (bad / "summary.json").write_text('{"counts": ')
    assert cli.main(["history", str(tmp_path / "runs")]) == 2
    assert "x/report/summary.json: not a verifier summary" in capsys.readouterr().err


def test_the_slowest_drills_dot_is_inside_the_plot(tmp_path, monkeypatch):
    from dcdrill.spark import figures

    runs = fleet(tmp_path)
    limits = []
    monkeypatch.setattr(figures, "png", lambda fig: limits.extend(ax.get_xlim() for ax in fig.axes) or "data:,")
    summaries = history.load([str(runs)])
    history.render_html(history.groups(summaries), summaries)
    (left, recovery_right), (_, gap_right) = limits
    # a margin of the axis, not of the data's spread: the slowest (44 s, and a 60 s gap) drawn whole
    assert left == 0 and recovery_right >= 44.0 * 1.05 and gap_right >= 60.0 * 1.05
