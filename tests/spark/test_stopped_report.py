"""A drill that stops before its verdict (exit 2, 3 or 4) still leaves report/junit.xml, with
the drill in error, so a CI pipeline has a test report to publish. The lab and Chaos Toolkit are
stood in for here (what they left is what is given); the lab tests run real drills."""

import html
import json
import xml.etree.ElementTree as ET

import pytest

from dcdrill import drill
from dcdrill.cli import build_parser
from dcdrill.exits import EXIT_BAD_INPUT, EXIT_NO_FAULT, EXIT_NOT_STEADY
from dcdrill.record.contents import JOURNAL

STEADY = {"steady_states": {"before": {"steady_state_met": True}}}
CASES = {
    "no journal": (None, EXIT_NO_FAULT, "left no journal"),
    "not steady": ({"steady_states": {"before": {"steady_state_met": False}}}, EXIT_NOT_STEADY, "steady state not met"),
    "bad input": (
        {
            **STEADY,
            "run": [
                {
                    "status": "failed",
                    "activity": {"name": "fail-over-consumers"},
                    "exception": ["ActivityFailed: [failover-no-offsets] no offsets for g\n"],
                }
            ],
        },
        EXIT_BAD_INPUT,
        "[failover-no-offsets] no offsets for g",
    ),
    "no fault": (STEADY, EXIT_NO_FAULT, "faults.jsonl records no fault"),
    "host lost": (
        STEADY,
        EXIT_NO_FAULT,
        "host access: c2.dc-b.lab (Connection refused) did not answer; nothing was injected",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_stopped_drill_leaves_junit_with_the_drill_in_error(case, tmp_path, monkeypatch, capsys):
    journal, code, message = CASES[case]
    run = tmp_path / "run"
    args = build_parser().parse_args(["drill", "--stack", "local", "--experiment", "kill-dc", "--run-dir", str(run)])
    plan = drill.Plan(args)

    def chaos_run(_args, record):
        assert record.plan().experiment == "kill-dc"  # written before the experiment starts
        if journal is not None:
            record.write_json(JOURNAL, journal)
        return 1

    monkeypatch.setattr(drill.lifecycle, "is_up", lambda stack: True)
    monkeypatch.setattr(drill.lifecycle, "inventory", lambda stack: None)
    monkeypatch.setattr(
        drill.lifecycle,
        "unanswered_hosts",
        lambda stack: ["c2.dc-b.lab (Connection refused)"] if case == "host lost" else [],
    )
    monkeypatch.setattr(drill.status, "cluster_status", lambda inv: {})
    monkeypatch.setattr(drill.status_text, "render", lambda st: "(the cluster's status)")
    monkeypatch.setattr(drill, "_chaos_run", chaos_run)
    assert drill._drill(args, plan, {}, run) == code
    assert message in capsys.readouterr().err
    root = ET.parse(run / "report" / "junit.xml").getroot()
    [case_el] = root.iter("testcase")
    assert (case_el.get("classname"), case_el.get("name")) == ("dcdrill.local.kill-dc", "drill")
    error = case_el.find("error")
    assert error.get("type") == f"exit {code}" and message in error.get("message")
    assert float(root.find("testsuite").get("time")) >= 0
    page = (run / "report" / "index.html").read_text()
    assert f"No verdict (exit {code})" in page and html.escape(message) in page
    assert json.loads((run / "experiment.json").read_text())["extensions"] == [
        {"name": "dcdrill", "experiment": "kill-dc"}
    ]


def test_a_drill_whose_wait_gave_up_names_the_causes_and_where_the_logs_are(tmp_path):
    from dcdrill.record import DrillRecord

    record = DrillRecord(tmp_path)
    (tmp_path / "faults.jsonl").write_text(
        json.dumps({"fault": "power-loss", "target": "dc-a", "start_ms": 1, "end_ms": 2}) + "\n"
    )
    (tmp_path / JOURNAL).write_text(
        json.dumps({"run": [{"activity": {"name": "wait-converged"}, "status": "failed"}], "rollbacks": []})
    )
    assert drill._fault_problem(record) == f"activities failed: wait-converged (see {record.file(JOURNAL)})"
    record.write_convergence({"causes": ["23 partition(s) without a leader (t-0, ...), whose ISR is [2]"]})
    said = drill._fault_problem(record)
    assert f"why the cluster did not converge (the hosts' logs: {tmp_path / 'logs'}):" in said
    assert said.endswith("  23 partition(s) without a leader (t-0, ...), whose ISR is [2]")


def test_the_page_of_a_drill_whose_wait_gave_up_shows_the_causes_and_links_each_hosts_log(tmp_path):
    from dcdrill.record import DrillRecord
    from dcdrill.spark import stopped_report

    record = DrillRecord(tmp_path)
    cause = "23 partition(s) without a leader (t-0, ...): the ISR's only member, broker 2 (b2), is <not registered>"
    record.write_convergence({"causes": [cause]})
    (tmp_path / "logs" / "b2.dc-a.lab").mkdir(parents=True)
    (tmp_path / "logs" / "b2.dc-a.lab" / "server.log").write_text("NodeExistsException\n")
    (tmp_path / "logs" / "p1.log").write_text("")
    (tmp_path / JOURNAL).write_text("{}")
    page = stopped_report.render(record, "local-power-loss", "isolate-then-power-loss", EXIT_NO_FAULT, "why")
    assert f"<li>{html.escape(cause)}</li>" in page and "No verdict (exit 3)" in page
    assert '<li>b2.dc-a.lab: <a href="../logs/b2.dc-a.lab/server.log">logs/b2.dc-a.lab/server.log</a></li>' in page
    assert '<a href="../logs/p1.log">' in page and '<a href="../journal.json">' in page
    assert "chaos.log" not in page  # links only what the record holds
    bare = stopped_report.render(DrillRecord(tmp_path / "none"), None, None, EXIT_NO_FAULT, "nothing was injected")
    assert "Why the cluster" not in bare and "None came back into the record." in bare
